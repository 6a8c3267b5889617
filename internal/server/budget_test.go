package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/search"
)

// stalledReads holds every Chunks, ListSources, Source, Stats and
// OwnerStats call until its context ends, as a store stalled on a
// pathological read does (the stores end a read when its context does);
// entered is closed at the first.
type stalledReads struct {
	recall.Store
	once    sync.Once
	entered chan struct{}
}

func (s *stalledReads) stall(ctx context.Context) error {
	s.once.Do(func() { close(s.entered) })
	<-ctx.Done()
	return ctx.Err()
}

func (s *stalledReads) Chunks(ctx context.Context, source string, from, to int) ([]recall.StoredChunk, error) {
	return nil, s.stall(ctx)
}

func (s *stalledReads) ListSources(ctx context.Context, opt recall.ListOptions) ([]recall.Source, string, error) {
	return nil, "", s.stall(ctx)
}

func (s *stalledReads) Source(ctx context.Context, id string) (recall.Source, error) {
	return recall.Source{}, s.stall(ctx)
}

func (s *stalledReads) Stats(ctx context.Context) (recall.Stats, error) {
	return recall.Stats{}, s.stall(ctx)
}

func (s *stalledReads) OwnerStats(ctx context.Context, owner string) (recall.Stats, error) {
	return recall.Stats{}, s.stall(ctx)
}

// get_context, find_memories, list_memories and the point reads
// (read_memory, read_diary, recent_diary, get_archive_stats,
// memory_index_status), and their REST routes, read within the engine's
// budget, as a search does: a read that stalls ends there with an error
// saying so, where it held the call until the client left (here the test
// client's 10 s timeout, which fails it).
func TestReadsKeepTheSearchBudget(t *testing.T) {
	var held *stalledReads
	f := newFixture(t, func(o *Options) {
		held = &stalledReads{Store: o.Store, entered: make(chan struct{})}
		o.Store = held
		// 2 s, as TestSearchTimeBudget's: the reads before the held one
		// must fit in it on a busy machine.
		o.Engine = search.New(held, search.Options{Embedder: o.Embedder, Budget: 2 * time.Second})
		o.Memory = memory.New(held, o.Engine, memory.Options{Embedder: o.Embedder, Space: testSpace})
	})
	f.archive("b.md", "B", "", "budget text", "more text")
	user, admin := f.connect(plainTok), f.connect(adminTok)
	const late = "took longer than the 2s a read may take"
	// A call is an MCP tool call (tool, args) or else a REST request
	// (method, path, body); cs and token are who makes it.
	type callCase struct {
		cs                        *mcp.ClientSession
		tool                      string
		args                      map[string]any
		token, method, path, body string
		want                      string // what the error says took longer
	}
	cases := []callCase{
		{cs: user, tool: "get_context", args: map[string]any{"source": "b.md", "chunk_index": 0}, want: "reading around the result"},
		{cs: user, tool: "find_memories", args: map[string]any{"prefix": "k"}, want: "listing memories"},
		{cs: admin, tool: "list_memories", args: map[string]any{}, want: "listing memories"},
		{cs: user, tool: "read_memory", args: map[string]any{"key": "k"}, want: "reading the memory"},
		{cs: user, tool: "read_diary", args: map[string]any{"date": "2025-07-01"}, want: "reading the diary"},
		{cs: user, tool: "recent_diary", args: map[string]any{}, want: "reading the diary"},
		{cs: user, tool: "get_archive_stats", args: map[string]any{}, want: "counting the archive"},
		{cs: admin, tool: "memory_index_status", args: map[string]any{}, want: "reading the memories' index states"},
		{token: plainTok, method: "POST", path: "/api/context", body: `{"source":"b.md","chunk_index":0}`, want: "reading around the result"},
		{token: plainTok, method: "GET", path: "/api/memories?prefix=k", want: "listing memories"},
		{token: plainTok, method: "GET", path: "/api/memories/k", want: "reading the memory"},
		{token: plainTok, method: "GET", path: "/api/diary/2025-07-01", want: "reading the diary"},
		{token: plainTok, method: "GET", path: "/api/diary?days=3", want: "reading the diary"},
		{token: plainTok, method: "GET", path: "/api/stats", want: "counting the archive"},
		{token: adminTok, method: "GET", path: "/admin/index-status", want: "reading the memories' index states"},
	}
	// The calls run at once (each waits out its budget), on goroutines of
	// their own rather than parallel subtests, which -parallel (the
	// machine's CPUs) would run a few at a time.
	type outcome struct {
		text   string
		failed bool // a tool error, or 503
		err    error
	}
	got := make([]outcome, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.cs != nil {
				res, err := tc.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if err == nil {
					got[i] = outcome{text: resultText(res), failed: res.IsError}
				}
				got[i].err = err
				return
			}
			status, body, err := rest(ctx, f, tc.token, tc.method, tc.path, tc.body)
			got[i] = outcome{text: body, failed: status == http.StatusServiceUnavailable, err: err}
		})
	}
	wg.Wait()
	for i, tc := range cases {
		name := tc.tool
		if name == "" {
			name = tc.method + " " + tc.path
		}
		if o := got[i]; o.err != nil || !o.failed || !strings.Contains(o.text, tc.want+" "+late) {
			t.Errorf("%s over a stalled read: %q (an error: %v, %v); want an error saying %q", name, o.text, o.failed, o.err, tc.want+" "+late)
		}
	}
	select {
	case <-held.entered:
	default:
		t.Error("no read reached the store's stalled call")
	}
}

// rest makes a REST call as token within ctx.
func rest(ctx context.Context, f *fixture, token, method, path, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, f.hs.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
