package postgres

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// TestKeyPostings: a write's postings go to COPY in key order (term, then
// chunk id), every one once, with each term's count of chunks and each
// chunk's terms as makeTermDoc made them.
func TestKeyPostings(t *testing.T) {
	texts := []string{"the cat sat on the mat", "a dog and a cat", "mat dog zebra", "naïve café 東京タワー", "cat"}
	docs := make([]termDoc, len(texts))
	ids := make([]int64, len(texts))
	for i, text := range texts {
		docs[i] = makeTermDoc("a title", &recall.Chunk{Text: text})
		ids[i] = int64(10 + 3*i)
	}
	k := keyPostings(docs, ids)

	var want []posting
	df := map[string]int32{}
	for i := range docs {
		if len(k.chunkTerms[i]) != len(docs[i].terms) {
			t.Fatalf("chunk %d: %d terms for its row, want %d", i, len(k.chunkTerms[i]), len(docs[i].terms))
		}
		for j := range docs[i].terms {
			p := &docs[i].terms[j]
			if string(k.chunkTerms[i][j]) != p.term {
				t.Errorf("chunk %d term %d: %q for its row, want %q", i, j, k.chunkTerms[i][j], p.term)
			}
			want = append(want, posting{[]byte(p.term), ids[i], p})
			df[p.term]++
		}
	}
	slices.SortFunc(want, func(a, b posting) int {
		return cmp.Or(bytes.Compare(a.term, b.term), cmp.Compare(a.chunkID, b.chunkID))
	})
	if len(k.posts) != len(want) {
		t.Fatalf("%d postings, want %d", len(k.posts), len(want))
	}
	for i := range want {
		if g, w := k.posts[i], want[i]; !bytes.Equal(g.term, w.term) || g.chunkID != w.chunkID || g.termPosting != w.termPosting {
			t.Errorf("posting %d: %q in %d, want %q in %d", i, g.term, g.chunkID, w.term, w.chunkID)
		}
	}
	if len(k.terms) != len(df) || !slices.IsSortedFunc(k.terms, bytes.Compare) {
		t.Errorf("terms %q: want the %d distinct terms in order", k.terms, len(df))
	}
	for i, term := range k.terms {
		if k.df[i] != df[string(term)] {
			t.Errorf("%q: df %d, want %d", term, k.df[i], df[string(term)])
		}
	}
}

// TestVectorsExact: vectors go to the server by COPY in pgvector's binary
// format (encodeUnits) and come back bit for bit, units in order, with the
// values a text encoding could round (the smallest subnormal, the largest
// float32, negative zero).
func TestVectorsExact(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{})
	defer db.Close()
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "p", Model: "m", Dim: 3}); err != nil {
		t.Fatal(err)
	}
	d := textDoc("a.md", "one text", "another text")
	vec := []float32{math.SmallestNonzeroFloat32, math.MaxFloat32, float32(math.Copysign(0, -1)), 1.0 / 3, -2.5e-38, 7}
	if _, err := db.Write(ctx, []recall.Document{d}, []recall.Vector{
		{Space: "s", Key: d.Chunks[0].VectorKey(), Vec: []float32{1, 2, 3}},
		{Space: "s", Key: d.Chunks[0].VectorKey(), Vec: vec}, // the last of a key wins
		{Space: "s", Key: d.Chunks[1].VectorKey(), Vec: vec[:3]},
		{Space: "s", Key: recall.TextHash("no chunk holds it"), Vec: vec[:3]},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := db.VectorsByKey(ctx, "s", []string{d.Chunks[0].VectorKey(), d.Chunks[1].VectorKey(), recall.TextHash("no chunk holds it")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d vectors stored, want the 2 whose keys a chunk holds", len(got))
	}
	for key, want := range map[string][]float32{d.Chunks[0].VectorKey(): vec, d.Chunks[1].VectorKey(): vec[:3]} {
		g := got[key]
		if len(g) != len(want) {
			t.Fatalf("%s: %v, want %v", key, g, want)
		}
		for i := range want {
			if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s value %d: %v (%#x), want %v (%#x)", key, i, g[i], math.Float32bits(g[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	if err := db.IntegrityCheck(ctx); err != nil { // the space's count of vectors among others
		t.Fatal(err)
	}
}
