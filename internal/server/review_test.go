package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
)

// A client-chosen HTTP method on /mcp never becomes a metric series of its
// own: series would grow without bound.
func TestMetricsSeriesBoundedUnderOddMethods(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 50 {
		f.do(fmt.Sprintf("X%d%s", i, strings.Repeat("A", 1000)), "/mcp", plainTok, "")
	}
	f.srv.metrics.requests.mu.Lock()
	n := len(f.srv.metrics.requests.vals)
	f.srv.metrics.requests.mu.Unlock()
	if n > 20 {
		t.Fatalf("%d request series after 50 odd methods", n)
	}
}

// A source whose path cleans into the memory namespace is refused on its
// own; the valid source beside it is written.
func TestIngestRefusesReservedPathAlone(t *testing.T) {
	f := newFixture(t, nil)
	st, out, body := f.ingest(plainTok,
		remote.IngestChunk{SourceFile: "./memory:alice:note", ChunkIndex: 0, TotalChunks: 1, Content: "x"},
		remote.IngestChunk{SourceFile: "ok.md", ChunkIndex: 0, TotalChunks: 1, Content: "fine"})
	if st != 200 || len(out.Sources) != 2 {
		t.Fatalf("want a per-source answer, got %d %s", st, body)
	}
	for _, s := range out.Sources {
		want := remote.StatusRejected
		if s.Source == "ok.md" {
			want = remote.StatusWritten
		}
		if s.Status != want {
			t.Errorf("%s: %s, want %s", s.Source, s.Status, want)
		}
	}
}

// A wrong method on a known path is 405 with Allow, not 404.
func TestMethodNotAllowed(t *testing.T) {
	f := newFixture(t, nil)
	resp, body := f.do("POST", "/api/stats", plainTok, "")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET" || !strings.Contains(body, "method_not_allowed") {
		t.Fatalf("POST /api/stats: %d Allow %q %s", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	if resp, _ := f.do("GET", "/api/nothing", plainTok, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}
}

// Staging counts what a waiting source holds, ids and titles included, so
// the limit bounds memory.
func TestStagingCountsIDsAndTitles(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.StageBytes = 20000 })
	title := strings.Repeat("é", ingest.MaxTitle)
	held := 0
	for i := range 200 {
		file := fmt.Sprintf("%s/%d.md", strings.Repeat("d", 1000), i)
		c := remote.IngestChunk{SourceFile: file, ChunkIndex: 0, TotalChunks: 100000, Content: "x", ConversationTitle: &title}
		st, _, body := f.ingest(plainTok, c)
		if st != 200 {
			t.Fatalf("%d %s", st, body)
		}
	}
	f.srv.stage.mu.Lock()
	for id, e := range f.srv.stage.m {
		held += len(id) + len(e.title) + len(e.era)
		for _, c := range e.chunks {
			held += len(c)
		}
	}
	f.srv.stage.mu.Unlock()
	if held > 20000 {
		t.Fatalf("StageBytes=20000 but staging holds %d bytes of ids, titles and text", held)
	}
}

// One token cannot hold every MCP session slot. At its share, a new
// session takes the slot of the token's least recently used idle session
// (clients of the TypeScript SDK close without ending theirs); with every
// one of them in use, initialize gets 503.
func TestSessionsPerToken(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Sessions, o.SessionsPerToken = 30, 3 })
	s1, s2, s3 := f.rawSession(plainTok), f.rawSession(plainTok), f.rawSession(plainTok)
	defer f.eventStream(plainTok, s1)() // the oldest, but its client listens
	ping := func(sid string) int {
		status, _ := f.rawCall(plainTok, sid, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		return status
	}
	ping(s2) // s3 is now the least recently used idle session
	s4 := f.rawSession(plainTok)
	if got := ping(s3); got != http.StatusNotFound {
		t.Errorf("the least recently used idle session after a fourth opened: %d, want 404 (ended)", got)
	}
	for _, sid := range []string{s1, s2, s4} {
		if got := ping(sid); got != http.StatusOK {
			t.Errorf("session %s after a fourth opened: %d", sid, got)
		}
	}
	defer f.eventStream(plainTok, s2)()
	defer f.eventStream(plainTok, s4)()
	if resp, body := f.do("POST", "/mcp", plainTok, initBody, mcpHeaders...); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "all of them in use") {
		t.Fatalf("a new session for a token whose sessions are all in use: %d %s", resp.StatusCode, body)
	}
	if resp, body := f.do("POST", "/mcp", aliceTok, initBody, mcpHeaders...); resp.StatusCode != http.StatusOK {
		t.Fatalf("another token locked out: %d %s", resp.StatusCode, body)
	}
}

// A session id presented with another token is refused and leaves the
// session as it was: it does not count as the session's use, so another
// token that learned the id cannot decide which of its owner's sessions
// ends when the owner opens one more.
func TestForeignUseDoesNotRefreshASession(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Sessions, o.SessionsPerToken = 30, 2 })
	s1, s2 := f.rawSession(aliceTok), f.rawSession(aliceTok)
	ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	if status, _ := f.rawCall(aliceTok, s2, ping); status != http.StatusOK { // s1 is the least recently used
		t.Fatalf("alice's ping: %d", status)
	}
	for _, tok := range []string{bobTok, plainTok, adminTok} {
		if status, _ := f.rawCall(tok, s1, ping); status != http.StatusForbidden {
			t.Fatalf("alice's session with another token: %d", status)
		}
	}
	f.rawSession(aliceTok)
	if status, _ := f.rawCall(aliceTok, s1, ping); status != http.StatusNotFound {
		t.Errorf("alice's least recently used session after a third opened: %d, want 404 (ended)", status)
	}
	if status, _ := f.rawCall(aliceTok, s2, ping); status != http.StatusOK {
		t.Errorf("alice's session she used last was ended (%d): the other tokens' requests counted as its use", status)
	}
}

// eventStream opens session sid's event stream (GET /mcp) and returns the
// function that closes it. The stream is open when eventStream returns.
func (f *fixture) eventStream(token, sid string) (stop func()) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.hs.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		f.t.Fatalf("event stream of %s: %v %v", sid, resp, err)
	}
	return func() { cancel(); resp.Body.Close() }
}

// Concurrent initialize requests cannot open more sessions than a token's
// share, nor, when its sessions are all in use, any.
func TestSessionsPerTokenUnderConcurrency(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Sessions, o.SessionsPerToken = 100, 5 })
	burst := func() (ok int32) {
		var wg sync.WaitGroup
		var n atomic.Int32
		for range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, body := f.do("POST", "/mcp", plainTok, initBody, mcpHeaders...)
				switch resp.StatusCode {
				case http.StatusOK:
					n.Add(1)
				case http.StatusServiceUnavailable:
				default:
					t.Errorf("initialize: %d %s", resp.StatusCode, body)
				}
			}()
		}
		wg.Wait()
		return n.Load()
	}
	if n := burst(); n == 0 {
		t.Fatal("no session opened")
	}
	if n := f.srv.sessionCount(); n > 5 {
		t.Fatalf("%d sessions open for a token allowed 5", n)
	}
	for len(f.srv.liveSessions()) < 5 {
		f.rawSession(plainTok)
	}
	for sid := range f.srv.liveSessions() {
		defer f.eventStream(plainTok, sid)()
	}
	if n := burst(); n != 0 {
		t.Fatalf("%d sessions opened while the token's 5 were all in use", n)
	}
}

// No error answer echoes a huge input back whole, whatever part of a
// request carried it.
func TestErrorsDoNotEchoHugeInput(t *testing.T) {
	f := newFixture(t, nil)
	huge := strings.Repeat("Z", 200000)
	sid := f.rawSession(plainTok)
	for name, body := range map[string]string{
		"MCP method": `{"jsonrpc":"2.0","id":5,"method":"` + huge + `"}`,
		"MCP params": `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":"` + huge + `"}`,
	} {
		if _, out := f.rawCall(plainTok, sid, body); len(out) > 2000 {
			t.Errorf("%s: %d bytes back", name, len(out))
		}
	}
	for name, req := range map[string][2]string{
		"REST unknown field": {"/api/search", `{"query":"x","` + huge + `":1}`},
		"REST bad mode":      {"/api/search", `{"query":"x","mode":"` + huge + `"}`},
		"ingest era":         {"/ingest", `{"chunks":[{"source_file":"a.md","chunk_index":0,"total_chunks":1,"content":"x","era":"` + huge + `"}]}`},
		"ingest path":        {"/ingest", `{"chunks":[{"source_file":"/` + huge + `","chunk_index":0,"total_chunks":1,"content":"x"}]}`},
	} {
		if _, out := f.do("POST", req[0], plainTok, req[1]); len(out) > 4000 {
			t.Errorf("%s: %d bytes back", name, len(out))
		}
	}
}
