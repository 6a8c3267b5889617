package search_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
	"github.com/recall-mcp/recall/internal/testvault"
)

// An engine that scans the store's vectors for each search
// (Options.ScanVectors, one-off commands) answers as one searching the
// loaded index, for every filter the index applies before its cut: its
// vector leg finds the same texts in the same order at the same float
// cosines, and so semantic searches return the same results. (Hybrid
// searches fuse those texts too, but the index's leg gives them their int8
// cosines there, off by about 0.001, where the scan's are exact: near ties
// can rank otherwise.)
func TestScanAnswersAsTheIndex(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 64)
	indexed := search.New(st, search.Options{Embedder: emb})
	if err := indexed.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	vault := filepath.Join(t.TempDir(), "vault")
	if _, err := testvault.Generate(vault, 120, 5000, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Sweep(ctx, st, indexed, vault, ingest.Options{Embedder: emb, Space: "t"}); err != nil {
		t.Fatal(err)
	}
	// Memories of two owners in two categories, and texts held by several
	// sources (one vector, several chunks, some of them filtered out).
	var mems []recall.Document
	for i := range 40 {
		owner := []string{"alice", "bob"}[i%2]
		d := memDoc(owner, fmt.Sprintf("note-%d", i), fmt.Sprintf("the garden budget for week %d: tomatoes, the landlord and a python exam", i%13))
		d.Source.Category = []string{"work", "home"}[i%3%2]
		mems = append(mems, d)
	}
	mems = append(mems, doc("shared/a.md", "the garden budget for week 3: tomatoes, the landlord and a python exam"))
	writeDocs(t, indexed, emb, mems...)

	scanned := search.New(st, search.Options{Embedder: emb, ScanVectors: true})
	if err := scanned.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	filters := []recall.Filter{
		{},
		{Kinds: []recall.Kind{recall.KindArchive}},
		{Kinds: []recall.Kind{recall.KindMemory}},
		{SourcePrefix: "2022/"},
		{Since: "2021-06", Until: "2022-03"},
		{OwnerScoped: true, Owner: "alice"},
		{OwnerScoped: true, Owner: "alice", Kinds: []recall.Kind{recall.KindMemory}, Category: "work"},
		{Category: "home"},
	}
	queries := []string{"garden tomatoes budget", "python exam landlord", "weather kettle morning",
		`deploy the database "server"`, "insurance doctor knee", "week 3"}
	compared, legs := 0, 0
	for _, f := range filters {
		for _, q := range queries {
			for _, limit := range []int{5, 20} {
				req := recall.SearchRequest{Query: q, Mode: recall.ModeSemantic, Limit: limit, PerSource: 2, Filter: f}
				want, err := indexed.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := scanned.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				sameResponse(t, fmt.Sprintf("%q limit %d filter %+v", q, limit, f), got, want)
				compared += len(want.Results)
			}
			// The legs alone, at hybrid's depth and deeper, and limited
			// to some sources as a quoted semantic search limits them.
			vecs, err := emb.Embed(ctx, recall.InputQuery, []string{q})
			if err != nil {
				t.Fatal(err)
			}
			for _, only := range []map[string]bool{nil, {"2022/01/chat-36.md": true, recall.MemoryID("alice", "note-4"): true, "shared/a.md": true}} {
				for _, k := range []int{40, 160} {
					want, err := indexed.VectorLeg(ctx, vecs[0], k, f, only)
					if err != nil {
						t.Fatal(err)
					}
					got, err := scanned.VectorLeg(ctx, vecs[0], k, f, only)
					if err != nil {
						t.Fatal(err)
					}
					sameLeg(t, fmt.Sprintf("%q k %d filter %+v only %v", q, k, f, only), got, want)
					legs += len(want)
				}
			}
		}
	}
	if compared < 500 || legs < 5000 {
		t.Errorf("only %d results and %d texts compared: the vault or the queries find too little", compared, legs)
	}
}

// sameResponse reports where got differs from want: mode, note, and the
// ranked results with their scores.
func sameResponse(t *testing.T, name string, got, want recall.SearchResponse) {
	t.Helper()
	if got.Mode != want.Mode || got.Note != want.Note {
		t.Errorf("%s: mode %q note %q; the index's %q %q", name, got.Mode, got.Note, want.Mode, want.Note)
	}
	if len(got.Results) != len(want.Results) {
		t.Errorf("%s: %d results; the index %d", name, len(got.Results), len(want.Results))
		return
	}
	for i, w := range want.Results {
		g := got.Results[i]
		if g.Source != w.Source || g.ChunkIndex != w.ChunkIndex || g.Kind != w.Kind || g.Owner != w.Owner ||
			fmt.Sprint(g.Match, g.AlsoIn) != fmt.Sprint(w.Match, w.AlsoIn) || math.Abs(g.Score-w.Score) > 1e-6 {
			t.Errorf("%s: result %d is %s#%d %v %v %.6f; the index's %s#%d %v %v %.6f", name, i,
				g.Source, g.ChunkIndex, g.Match, g.AlsoIn, g.Score, w.Source, w.ChunkIndex, w.Match, w.AlsoIn, w.Score)
		}
	}
}

// sameLeg reports where the texts a vector leg found differ from want's:
// order, chunks and scores.
func sameLeg(t *testing.T, name string, got, want []search.VectorHit) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d texts; the index %d", name, len(got), len(want))
		return
	}
	for i, w := range want {
		g := got[i]
		if g.Key != w.Key || !slices.Equal(g.ChunkIDs, w.ChunkIDs) || math.Abs(float64(g.Score-w.Score)) > 1e-6 {
			t.Errorf("%s: text %d is %.12s %v %.6f; the index's %.12s %v %.6f", name, i, g.Key, g.ChunkIDs, g.Score, w.Key, w.ChunkIDs, w.Score)
		}
	}
}

// Without vectors to search (no space yet, an empty space, a query
// embedder of another size), an engine that scans says what one with an
// index says: hybrid falls back to full text with the same note, semantic
// fails with the same error.
func TestScanWithoutVectorsAnswersAsTheIndex(t *testing.T) {
	ctx := context.Background()
	noSpace := func() (*sqlite.DB, recall.Embedder) {
		st := newStore(t)
		if _, err := st.Write(ctx, []recall.Document{doc("a.md", "sourdough starter notes")}, nil); err != nil {
			t.Fatal(err)
		}
		return st, embedtest.New(8)
	}
	emptySpace := func() (*sqlite.DB, recall.Embedder) {
		st, emb := newSpaceStore(t, 8)
		if _, err := st.Write(ctx, []recall.Document{doc("a.md", "sourdough starter notes")}, nil); err != nil {
			t.Fatal(err)
		}
		return st, emb
	}
	otherSize := func() (*sqlite.DB, recall.Embedder) {
		st, emb := newSpaceStore(t, 8)
		writeDocs(t, st, emb, doc("a.md", "sourdough starter notes"))
		return st, embedtest.New(16)
	}
	for name, open := range map[string]func() (*sqlite.DB, recall.Embedder){"no space": noSpace, "empty space": emptySpace, "query of another size": otherSize} {
		st, emb := open()
		var resp [2]recall.SearchResponse
		var errs [2]string
		for i, scan := range []bool{false, true} {
			eng := search.New(st, search.Options{Embedder: emb, ScanVectors: scan})
			if err := eng.LoadIndex(ctx); err != nil {
				t.Fatal(err)
			}
			var err error
			if resp[i], err = eng.Search(ctx, recall.SearchRequest{Query: "sourdough starter"}); err != nil {
				t.Fatal(err)
			}
			_, err = eng.Search(ctx, recall.SearchRequest{Query: "sourdough starter", Mode: recall.ModeSemantic})
			errs[i] = fmt.Sprint(err)
		}
		if resp[1].Mode != resp[0].Mode || resp[1].Note != resp[0].Note || len(resp[1].Results) != len(resp[0].Results) || errs[1] != errs[0] {
			t.Errorf("%s: scanning, hybrid is %s (%q) with %d results and semantic fails with %q; with the index, %s (%q), %d, %q",
				name, resp[1].Mode, resp[1].Note, len(resp[1].Results), errs[1], resp[0].Mode, resp[0].Note, len(resp[0].Results), errs[0])
		}
		if errs[0] == "<nil>" {
			t.Errorf("%s: a semantic search succeeded", name)
		}
	}
}
