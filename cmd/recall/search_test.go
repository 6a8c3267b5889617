package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// scanCounter is a store that counts the loads of a vector index and the
// scans of a search without one.
type scanCounter struct {
	recall.Store
	loads, streams atomic.Int32
}

func (s *scanCounter) ScanVectors(ctx context.Context, space string, fn func(recall.IndexedChunk, []float32) error) error {
	s.loads.Add(1)
	return s.Store.ScanVectors(ctx, space, fn)
}

func (s *scanCounter) StreamVectors(ctx context.Context, space string, fn func(recall.IndexedChunk, []float32) error) error {
	s.streams.Add(1)
	return s.Store.StreamVectors(ctx, space, fn)
}

// A one-off search reads the vectors only when it can search them: not
// for --mode lexical, nor without a query embedder (at 100,000 chunks the
// load was 9 of a search's 10 seconds). Searching them, it scans them as
// it scores them rather than load an index for one query (2.75 s at
// 100,000 chunks); a file of queries loads the index.
func TestOneOffSearchLoadsVectorsOnlyToSearchThem(t *testing.T) {
	env := testEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		json.NewDecoder(r.Body).Decode(&req)
		json.NewEncoder(w).Encode(map[string]any{"embeddings": vectorsOf(req.Input, 8)})
	}))
	defer srv.Close()
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "m", srv.URL
	if out, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatalf("sweep: exit %d: %s%s", code, out, errs)
	}

	search := func(embedder, stdin string, args ...string) (recall.SearchResponse, int32, int32) {
		t.Helper()
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		e["RECALL_EMBEDDER"] = embedder
		db, err := sqlite.Open(context.Background(), env["RECALL_DB"], sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := &scanCounter{Store: db}
		var out, errb bytes.Buffer
		m := NewMain()
		m.Stdout, m.Stderr, m.Stdin = &out, &errb, strings.NewReader(stdin)
		m.Getenv = func(k string) string { return e[k] }
		m.IsTerminal = func() bool { return false }
		m.store = st
		m.closers = append(m.closers, db.Close)
		code := m.Run(context.Background(), append([]string{"search", "--json"}, args...))
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		var resp recall.SearchResponse
		if code != 0 || json.Unmarshal(out.Bytes(), &resp) != nil {
			t.Fatalf("search %v: exit %d: %s%s", args, code, out.String(), errb.String())
		}
		return resp, st.loads.Load(), st.streams.Load()
	}
	for _, tt := range []struct {
		embedder string
		args     []string
		stdin    string
		mode     string
		loads    int32
		scans    int32
	}{
		{"ollama", []string{"sourdough starter"}, "", recall.ModeHybrid, 0, 1},
		{"ollama", []string{"--mode", "semantic", "sourdough starter"}, "", recall.ModeSemantic, 0, 1},
		{"ollama", []string{"--queries", "-"}, `{"query": "sourdough starter"}`, recall.ModeHybrid, 1, 0},
		{"ollama", []string{"--mode", "lexical", "sourdough starter"}, "", recall.ModeLexical, 0, 0},
		{"none", []string{"sourdough starter"}, "", recall.ModeLexical, 0, 0},
	} {
		resp, loads, scans := search(tt.embedder, tt.stdin, tt.args...)
		if loads != tt.loads || scans != tt.scans || resp.Mode != tt.mode || len(resp.Results) == 0 {
			t.Errorf("embedder %s, search %v: mode %s, %d results, %d index loads, %d scans; want mode %s, %d loads, %d scans",
				tt.embedder, tt.args, resp.Mode, len(resp.Results), loads, scans, tt.mode, tt.loads, tt.scans)
		}
	}
}

// sweptThrough sweeps the sample vault into a new database with model-a of
// a fake Ollama that h serves, and returns the environment naming both.
func sweptThrough(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	env := testEnv(t)
	env["RECALL_EMBEDDER"], env["RECALL_MODEL"], env["RECALL_OLLAMA_URL"] = "ollama", "model-a", srv.URL
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	return env
}

// A search that falls back to full text because the query could not be
// embedded says why on stderr (the results' note cannot: it is also what
// clients get): a wrong key, a server down and a missing model read alike
// there. A file of queries says each reason once, and asks the embedder
// for its first query alone: the others, in the wait that failure starts,
// go to full text without calling it.
func TestSearchSaysWhyTheQueryWasNotEmbedded(t *testing.T) {
	var down atomic.Bool
	var requests atomic.Int32
	inner := ollamaHandler(&down)
	env := sweptThrough(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		inner.ServeHTTP(w, r)
	}))
	down.Store(true)
	const why = "the query could not be embedded: ollama failed (HTTP 500"
	requests.Store(0)
	out, errs, code := run(t, env, "search", "sourdough starter")
	if code != 0 || !strings.Contains(out, "searched full text only") || !strings.Contains(errs, why) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the fallback and, on stderr, %q", code, out, errs, why)
	}
	one := requests.Load() // the client's attempts for one query
	queries := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(queries, []byte("{\"query\": \"sourdough\"}\n{\"query\": \"starter\"}\n{\"query\": \"rye\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	requests.Store(0)
	out, errs, code = run(t, env, "search", "--queries", queries)
	if code != 0 || strings.Count(errs, why) != 1 {
		t.Fatalf("batch: exit %d, stderr %q; want the reason once", code, errs)
	}
	if n, noted := requests.Load(), strings.Count(out, "the query embedder failed"); n != one || noted != 2 {
		t.Errorf("batch of 3 queries: %d requests to the embedder, %d answers noting its failure; want %d, those of the first query, and 2", n, noted, one)
	}
}

// A command waits for the embedder (a minute), and its search still has
// its time for the rest after that wait: a file of queries whose embedder
// answered after the search's budget had lines failing "ran out of time".
func TestSearchBatchWaitsForTheEmbedder(t *testing.T) {
	var slow atomic.Bool
	inner := ollamaHandler(new(atomic.Bool))
	env := sweptThrough(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			time.Sleep(time.Second) // past the search's work budget below
		}
		inner.ServeHTTP(w, r)
	}))
	slow.Store(true)
	out, errs, code := runWith(t, context.Background(), strings.NewReader(`{"query": "sourdough starter"}`), env,
		func(m *Main) { m.searchWork = 500 * time.Millisecond }, "search", "--queries", "-")
	var resp recall.SearchResponse
	if code != 0 || json.Unmarshal([]byte(out), &resp) != nil || resp.Mode != recall.ModeHybrid || len(resp.Results) == 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want the query embedded and answered", code, out, errs)
	}
}

// An export is no source: each of its conversations is. `context` given
// the export's path (or a folder's) names some of them, rather than a bare
// "no source".
func TestContextOfAnExportNamesItsConversations(t *testing.T) {
	env := testEnv(t)
	env["RECALL_EMBEDDER"] = "none"
	if _, errs, code := run(t, env, "sweep", sampleVault); code != 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"context", "exports/claude/conversations.json", "0"},
			`no source "exports/claude/conversations.json": it holds conversations, each a source of its own: give one of them, such as "exports/claude/conversations.json/7d3c9a10-1111-4c2e-8f00-0123456789ab"` + "\n"},
		{[]string{"context", "exports/claude/", "0"}, // a folder, likewise
			`no source "exports/claude/": it holds conversations, each a source of its own: give one of them, such as "exports/claude/conversations.json/7d3c9a10-1111-4c2e-8f00-0123456789ab"` + "\n"},
		{[]string{"context", "exports/claud", "0"}, `no source "exports/claud"` + "\n"}, // a prefix of a name is not its folder
		{[]string{"context", "--kind", "memory", "exports/claude/conversations.json", "0"}, `no source "exports/claude/conversations.json"` + "\n"},
	} {
		if _, errs, code := run(t, env, c.args...); code != exitFailure || errs != "recall: "+c.want {
			t.Errorf("%v: exit %d %q, want 1 and %q", c.args, code, errs, "recall: "+c.want)
		}
	}
}
