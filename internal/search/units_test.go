package search

import (
	"context"
	"fmt"
	"testing"

	"github.com/recall-mcp/recall"
)

// The vector leg ranks passages, not copies: one text under many headers
// (a pasted text in thirty conversations, each titled its own way, so each
// has a vector key of its own) is one hit, at its best copy's score, and
// the other passages still fill the k asked for.
func TestUnitSearchGroupsCopiesOfAText(t *testing.T) {
	const dim = 4
	vecs := map[string][]float32{}
	x := newUnitIndex(dim, func(_ context.Context, keys []string) (map[string][]float32, error) {
		out := map[string][]float32{}
		for _, k := range keys {
			if v, ok := vecs[k]; ok {
				out[k] = v
			}
		}
		return out, nil
	})
	var res recall.WriteResult
	add := func(id int64, header, text string, vec []float32) {
		c := recall.Chunk{Text: text, Hash: recall.TextHash(text), Header: header}
		vecs[c.VectorKey()] = vec
		res.Added = append(res.Added, recall.IndexedChunk{ID: id, Hash: c.Hash, VectorKey: c.VectorKey(),
			Source: recall.SourceMeta{ID: fmt.Sprintf("s%d.md", id), Kind: recall.KindArchive}})
	}
	for i := range 30 {
		add(int64(i+1), fmt.Sprintf("Chat %d (2024-01-%02d)", i, i%28+1), "the pasted instructions", []float32{1, 0, 0, 0.01 * float32(i%3)})
	}
	for i := range 5 {
		add(int64(100+i), "Other (2024-02-01)", fmt.Sprintf("another passage %d", i), []float32{0.9, 0.1 * float32(i+1), 0, 0})
	}
	if err := x.apply(res, vecs); err != nil {
		t.Fatal(err)
	}
	hits, err := x.search(context.Background(), []float32{1, 0, 0, 0}, 5, recall.Filter{}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]bool{}
	for _, h := range hits {
		texts[h.Key[:recall.KeyPrefixLen]] = true
	}
	if len(hits) != 5 || len(texts) != 5 || hits[0].Key[:recall.KeyPrefixLen] != recall.TextHash("the pasted instructions")[:recall.KeyPrefixLen] {
		t.Errorf("search for 5: %d hits of %d texts, first %+v; want 5 texts, the pasted one first", len(hits), len(texts), hits[0])
	}
}
