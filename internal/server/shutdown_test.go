package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/search"
)

// holdEmbedder embeds like the fixture's embedder, except a text holding
// "HOLD", whose call waits until release is closed or its context ends.
// held is closed when such a call arrives.
type holdEmbedder struct {
	recall.Embedder
	held, release chan struct{}
}

func (h *holdEmbedder) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "HOLD") {
			close(h.held)
			select {
			case <-h.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return h.Embedder.Embed(ctx, kind, texts)
}

// heldServer is a fixture whose memory saves of a value holding "HOLD"
// wait for the test, served by Serve (not httptest) with the given grace.
func heldServer(t *testing.T, grace time.Duration) (*fixture, *holdEmbedder, string, func() error) {
	t.Helper()
	var hold *holdEmbedder
	f := newFixture(t, func(o *Options) {
		hold = &holdEmbedder{Embedder: o.Embedder, held: make(chan struct{}), release: make(chan struct{})}
		// The save waits for the embedder as long as the test holds it.
		o.Memory = memory.New(o.Store, o.Engine, memory.Options{Embedder: hold, Space: testSpace, EmbedBudget: time.Hour})
		o.Grace = grace
	})
	ln, err := f.srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ctx, ln) }()
	stop := func() error { cancel(); return <-served }
	t.Cleanup(func() { cancel(); f.srv.Hurry() })
	return f, hold, "http://" + ln.Addr().String(), stop
}

// heldSave starts saving a memory whose embedding the test holds, with a
// tool call in an MCP session on url, and returns once the save waits for
// it, with a channel that gets the call's outcome (nil: saved). Its
// answer comes as an event stream too, one that ends with the call.
func heldSave(t *testing.T, f *fixture, url string, hold *holdEmbedder) <-chan error {
	t.Helper()
	cs, err := f.dial(plainTok, url+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	got := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "save_memory",
			Arguments: map[string]any{"key": "held", "value": "HOLD the door"}})
		if err == nil && res.IsError {
			err = errors.New(resultText(res))
		}
		got <- err
	}()
	<-hold.held
	return got
}

// TestShutdownEndsEventStreams: a client holding its MCP session's event
// stream open (GET /mcp) does not hold up a stopping server. The stream
// is ended, cleanly, as shutdown begins, while a request in flight still
// has its grace and is answered. The grace is a minute, so a server that
// waited for the stream would be unmistakable: it would cut the stream
// when the minute was up instead of ending it.
func TestShutdownEndsEventStreams(t *testing.T) {
	f, hold, url, stop := heldServer(t, time.Minute)
	sid := f.rawSession(plainTok)
	req, _ := http.NewRequest("GET", url+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+plainTok)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != 200 || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /mcp: %d %s", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	saved := heldSave(t, f, url, hold)

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	if _, err := io.ReadAll(stream.Body); err != nil {
		t.Fatalf("the event stream was cut, not ended, by the shutdown: %v", err)
	}
	// The stream ended while the save still held the shutdown.
	close(hold.release)
	if err := <-saved; err != nil {
		t.Errorf("the save in flight when shutdown began: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := f.mem.Read(context.Background(), "held", "", memory.Scope{}); err != nil {
		t.Errorf("the save answered during the shutdown is not stored: %v", err)
	}
}

// TestHurryCutsShutdownShort: Hurry (a second interrupt) stops a
// shutdown's wait for the requests in flight, however long the grace:
// their connections are closed and their contexts end, Serve returns, and
// Wait stops waiting for background work.
func TestHurryCutsShutdownShort(t *testing.T) {
	f, hold, url, stop := heldServer(t, time.Hour)
	saved := heldSave(t, f, url, hold)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	f.srv.bg.wg.Add(1) // background work that does not end by itself
	defer f.srv.bg.wg.Done()
	f.srv.Hurry()
	if err := <-stopped; err != nil {
		t.Errorf("Serve: %v", err)
	}
	// Its context ended: it is refused, or its connection closed first.
	if err := <-saved; err == nil {
		t.Error("the save in flight was waited for; it should have been cut")
	}
	if f.srv.Wait(time.Hour) {
		t.Error("Wait reports background work ended that had not")
	}
}

// heldCommit holds the first write of sources made through it, once
// committed, until release is closed (held is closed when it waits), and
// counts the writes of sources.
type heldCommit struct {
	recall.Store
	held, release chan struct{}
	first         []string // the sources the held write committed
	writes        atomic.Int32
}

func (s *heldCommit) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	if len(docs) == 0 || s.writes.Add(1) > 1 {
		return s.Store.Write(ctx, docs, vecs, remove...)
	}
	res, err := s.Store.Write(ctx, docs, vecs, remove...)
	for _, d := range docs {
		s.first = append(s.first, d.Source.ID)
	}
	close(s.held)
	<-s.release
	return res, err
}

// lookupCounter closes looked at its store's nth VectorsByKey call. A
// sweep without an embedder, as the server's is, makes one per file in
// walk order, before it hands the file to its writer: at the nth, the
// files before it are with the writer, whole (an interruption no longer
// cuts them).
type lookupCounter struct {
	recall.Store
	n      int32
	calls  atomic.Int32
	looked chan struct{}
}

func (s *lookupCounter) VectorsByKey(ctx context.Context, space string, hashes []string) (map[string][]float32, error) {
	if s.calls.Add(1) == s.n {
		close(s.looked)
	}
	return s.Store.VectorsByKey(ctx, space, hashes)
}

// Hurry (a second interrupt) makes the server's vault sweep skip its stop
// grace: what it had read but not committed when the server began to stop
// is dropped, not committed in the 5 s a first interrupt leaves it. The
// sweep's first transaction is a.md alone (over 1 MiB of text, a server
// sweep's transaction limit); the test holds it, committed, until b.md is
// with the writer for the next one, then stops the server, hurries it and
// lets the transaction end. Were the hurry not passed on to the sweep
// (ingest.Options.Hurry), b.md would be committed in the grace.
func TestHurrySkipsTheSweepsStopGrace(t *testing.T) {
	vault := t.TempDir()
	var big []string
	for i := range 8000 { // 1.6 MB
		big = append(big, fmt.Sprintf("**User:** question %d about rye?\n\n**Assistant:** %s", i, strings.Repeat("oats and barley ", 10)))
	}
	for name, text := range map[string]string{"a.md": strings.Join(big, "\n\n"),
		"b.md": "**User:** question about spelt?\n\n**Assistant:** spelt is a wheat",
		"c.md": "**User:** question about millet?\n\n**Assistant:** millet is a grass"} {
		if err := os.WriteFile(filepath.Join(vault, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var commits *heldCommit
	var lookups *lookupCounter
	f := newFixture(t, func(o *Options) {
		commits = &heldCommit{Store: o.Store, held: make(chan struct{}), release: make(chan struct{})}
		lookups = &lookupCounter{Store: o.Store, n: 3, looked: make(chan struct{})}
		o.Engine = search.New(commits, search.Options{Embedder: o.Embedder, MemoryLexical: true})
		o.Memory = memory.New(o.Store, o.Engine, memory.Options{Embedder: o.Embedder, Space: testSpace})
		o.Store = lookups
		o.Vaults, o.FollowEvery = []string{vault}, -1
	})
	ctx, cancel := context.WithCancel(context.Background())
	release := sync.OnceFunc(func() { close(commits.release) })
	t.Cleanup(func() { cancel(); release(); f.srv.bg.wg.Wait() }) // before the store closes
	f.srv.Start(ctx)
	<-commits.held
	if !slices.Equal(commits.first, []string{"a.md"}) {
		t.Fatalf("the sweep's first transaction holds %v; the test needs a.md alone", commits.first)
	}
	<-lookups.looked // c.md's: b.md is with the writer
	cancel()
	f.srv.Hurry()
	release()
	f.srv.bg.wg.Wait() // Wait would not: it stops waiting at Hurry

	abs, err := ingest.VaultPath(vault)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.st.Manifest(context.Background(), recall.KindArchive, abs)
	if err != nil {
		t.Fatal(err)
	}
	if ids := slices.Sorted(maps.Keys(stored)); commits.writes.Load() != 1 || !slices.Equal(ids, commits.first) {
		t.Errorf("after Hurry the sweep made %d more writes, and the store holds %v; want none, and a.md alone",
			commits.writes.Load()-1, ids)
	}
}
