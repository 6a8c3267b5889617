package search_test

import (
	"context"
	"math"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/search"
)

// TestMemoryLexicalMatchesStore: with the in-memory full-text index, every
// golden query (and its filtered variants) gets the same results with the
// same scores as from the store's full-text search, in every mode.
func TestMemoryLexicalMatchesStore(t *testing.T) {
	qs := goldenQueries(t)
	store := sweptEngineWith(t, search.Options{})
	mem := sweptEngineWith(t, search.Options{MemoryLexical: true})
	filters := []recall.Filter{{}, {Kinds: []recall.Kind{recall.KindArchive}}, {SourcePrefix: "exports/"}, {Since: "2025-01"}}
	extra := []string{"tea", "running late", "\"grey cat\"", "薄", "the"}
	var queries []string
	for _, q := range qs {
		queries = append(queries, q.Query)
	}
	for _, q := range append(queries, extra...) {
		for _, fl := range filters {
			for _, mode := range []string{recall.ModeLexical, recall.ModeHybrid} {
				req := recall.SearchRequest{Query: q, Mode: mode, Limit: 10, Filter: fl}
				a, err := store.Search(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := mem.Search(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if len(a.Results) != len(b.Results) {
					t.Fatalf("%q %s %+v: %d results from the store's index, %d from memory", q, mode, fl, len(a.Results), len(b.Results))
				}
				for i := range a.Results {
					x, y := a.Results[i], b.Results[i]
					if x.Source != y.Source || x.ChunkIndex != y.ChunkIndex || math.Abs(x.Score-y.Score) > 1e-9*max(1, math.Abs(x.Score)) {
						t.Errorf("%q %s %+v: result %d is %s#%d (%v) from the store, %s#%d (%v) from memory",
							q, mode, fl, i, x.Source, x.ChunkIndex, x.Score, y.Source, y.ChunkIndex, y.Score)
					}
				}
			}
		}
	}
}
