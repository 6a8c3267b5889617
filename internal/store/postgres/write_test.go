package postgres

import (
	"bytes"
	"cmp"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
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
