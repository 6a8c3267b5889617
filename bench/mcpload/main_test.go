package main

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/repair"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/server"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

func TestPercentile(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		values []float64
		p      float64
		want   float64
	}{
		{nil, 50, 0},
		{[]float64{7}, 99, 7},
		{ten, 50, 5},
		{ten, 90, 9},
		{ten, 99, 10},
		{ten, 100, 10},
		{ten, 1, 1},
	} {
		if got := percentile(tc.values, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %g) = %g, want %g", tc.values, tc.p, got, tc.want)
		}
	}
}

func TestQueryMix(t *testing.T) {
	c := config{seed: 3}
	fresh := map[string]bool{}
	r := clientRand(c, 0)
	for n := range 200 {
		q := query(c, 0, n, r)
		if w := len(strings.Fields(q)); w < 2 || w > 4 {
			t.Fatalf("query %q has %d words", q, w)
		}
		fresh[q] = true
	}
	c.queries = 5
	fixed := map[string]bool{}
	for i := range 4 {
		r := clientRand(c, i)
		for n := range 50 {
			fixed[query(c, i, n, r)] = true
		}
	}
	if len(fixed) != 5 || len(fresh) < 150 {
		t.Errorf("-queries 5 gave %d distinct queries, the default %d of 200", len(fixed), len(fresh))
	}
}

// serve starts a recall server over a small archive; withVectors decides
// whether hybrid search is possible.
func serve(t *testing.T, withVectors bool) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "recall.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var emb recall.Embedder
	space := ""
	if withVectors {
		emb, space = embedtest.New(32), "embedtest"
		if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: space, Provider: "embedtest", Model: "word-hash", Dim: 32, Normalized: true}); err != nil {
			t.Fatal(err)
		}
	}
	eng := search.New(st, search.Options{Embedder: emb})
	var docs []recall.Document
	for i, w := range vocabulary {
		text := fmt.Sprintf("A conversation about the %s and the %s.", w, vocabulary[(i*7)%len(vocabulary)])
		docs = append(docs, recall.Document{
			Source: recall.Source{ID: fmt.Sprintf("chat/%03d.md", i), Kind: recall.KindArchive, ContentHash: recall.TextHash(text), ChunkCount: 1},
			Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}},
		})
	}
	if _, err := eng.Write(ctx, docs, nil); err != nil {
		t.Fatal(err)
	}
	if withVectors {
		if _, err := repair.Run(ctx, st, eng, space, emb, repair.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := server.New(server.Options{Engine: eng, Store: st, Embedder: emb, Space: space,
		Memory: memory.New(st, eng, memory.Options{Embedder: emb, Space: space}),
		Tokens: []server.Token{{Name: "load", Secret: testToken}}, Rate: rate.Inf})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	srv.Start(sctx) // loads the vector index
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

const testToken = "load-test-token-0123456789abcdef"

func TestRun(t *testing.T) {
	url := serve(t, true)
	c := config{url: url, token: testToken, clients: 3, duration: 500 * time.Millisecond, mode: "hybrid", limit: 5, seed: 1, wait: 10 * time.Second}
	sum, err := run(context.Background(), c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests < 3 || sum.Errors != 0 || sum.Modes["hybrid"] != sum.Requests {
		t.Fatalf("summary: %+v", sum)
	}
	if sum.Chunks != len(vocabulary) || sum.Vectors != len(vocabulary) {
		t.Errorf("server size: %d chunks, %d vectors, want %d", sum.Chunks, sum.Vectors, len(vocabulary))
	}
	if !(sum.P50 > 0 && sum.P50 <= sum.P90 && sum.P90 <= sum.P99 && sum.P99 <= sum.Max) {
		t.Errorf("percentiles out of order: %+v", sum)
	}
	if sum.Results <= 0 || sum.Results > 5 {
		t.Errorf("mean results %g", sum.Results)
	}

	// Paced: about rate x clients x duration requests.
	c.rate, c.duration = 20, time.Second
	sum, err = run(context.Background(), c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests < 20 || sum.Requests > 120 || sum.Errors != 0 {
		t.Errorf("3 clients at 20/s for 1 s made %d requests, %d errors", sum.Requests, sum.Errors)
	}
}

// Answers in another mode than asked (hybrid without vectors falls back to
// full text) and refused tokens are errors, never latencies.
func TestRunCountsErrors(t *testing.T) {
	url := serve(t, false)
	c := config{url: url, token: testToken, clients: 2, duration: 300 * time.Millisecond, mode: "lexical", limit: 5, seed: 1, wait: time.Second}
	sum, err := run(context.Background(), c, io.Discard)
	if err != nil || sum.Errors != 0 || sum.Requests == 0 {
		t.Fatalf("lexical: %v %+v", err, sum)
	}
	c.mode = "hybrid"
	sum, err = run(context.Background(), c, io.Discard)
	if err != nil || sum.Requests == 0 || sum.Errors != sum.Requests || !strings.Contains(sum.FirstError, "served lexical") {
		t.Errorf("hybrid without vectors: %v %+v", err, sum)
	}
	c.wait, c.mode = 0, "semantic"
	c.token = "wrong-token-0123456789abcdefghij"
	if _, err := run(context.Background(), c, io.Discard); err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("wrong token: %v", err)
	}
}
