package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/search"
)

// stalledReads holds every Chunks and ListSources call until its context
// ends, as a store stalled on a pathological read does (the stores end a
// read when its context does); entered is closed at the first.
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

// rest makes a REST call as plainTok that a client gives up after 10 s,
// as call does an MCP call, so that a server holding it fails the test
// rather than hanging it.
func rest(t *testing.T, f *fixture, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, f.hs.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+plainTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// get_context, find_memories and list_memories (and their REST routes)
// read within the engine's budget, as a search does: a read that stalls
// ends there with an error saying so, where it held the call until the
// client left (here the test client's 10 s timeout, which fails it).
func TestReadsKeepTheSearchBudget(t *testing.T) {
	var held *stalledReads
	f := newFixture(t, func(o *Options) {
		held = &stalledReads{Store: o.Store, entered: make(chan struct{})}
		// 2 s, as TestSearchTimeBudget's: the reads before the held one
		// must fit in it on a busy machine.
		o.Engine = search.New(held, search.Options{Embedder: o.Embedder, Budget: 2 * time.Second})
		o.Memory = memory.New(held, o.Engine, memory.Options{Embedder: o.Embedder, Space: testSpace})
	})
	f.archive("b.md", "B", "", "budget text", "more text")
	user, admin := f.connect(plainTok), f.connect(adminTok)
	// The calls run at once (each waits out its budget); the group ends
	// when they all have.
	t.Run("reads", func(t *testing.T) {
		for _, tc := range []struct {
			name, want string
			run        func(t *testing.T) (string, bool)
		}{
			{"get_context", "reading around the result took longer than the 2s a read may take", func(t *testing.T) (string, bool) {
				res := call(t, user, "get_context", map[string]any{"source": "b.md", "chunk_index": 0})
				return resultText(res), res.IsError
			}},
			{"find_memories", "listing memories took longer than the 2s a read may take", func(t *testing.T) (string, bool) {
				res := call(t, user, "find_memories", map[string]any{"prefix": "k"})
				return resultText(res), res.IsError
			}},
			{"list_memories", "listing memories took longer than the 2s a read may take", func(t *testing.T) (string, bool) {
				res := call(t, admin, "list_memories", map[string]any{})
				return resultText(res), res.IsError
			}},
			{"POST /api/context", "reading around the result took longer", func(t *testing.T) (string, bool) {
				status, body := rest(t, f, "POST", "/api/context", `{"source":"b.md","chunk_index":0}`)
				return body, status == 503
			}},
			{"GET /api/memories", "listing memories took longer", func(t *testing.T) (string, bool) {
				status, body := rest(t, f, "GET", "/api/memories?prefix=k", "")
				return body, status == 503
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel() // each waits out its budget
				text, failed := tc.run(t)
				if !failed || !strings.Contains(text, tc.want) {
					t.Errorf("over a stalled read: %q (an error: %v); want an error saying %q", text, failed, tc.want)
				}
			})
		}
	})
	select {
	case <-held.entered:
	default:
		t.Error("no read reached the store's stalled call")
	}
}
