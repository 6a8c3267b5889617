package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// While the embedder fails, background repair backs off (5 s, then longer),
// and writes that would wake it early (every /ingest) do not cut that short.
func TestBackgroundBackoffHoldsUnderIngest(t *testing.T) {
	f := newFixture(t, nil)
	emb := embedtest.New(64)
	emb.FailOn(0, embedtest.FaultError)
	doc := recall.Document{Source: recall.Source{ID: "b.md", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash("x"), ChunkCount: 1, IndexState: recall.IndexOK},
		Chunks: []recall.Chunk{{Index: 0, Text: "a text without a vector", Header: "t", Hash: recall.TextHash("a text without a vector")}}}
	if _, err := f.eng.Write(context.Background(), []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	b := newBackground(f.eng, f.st, emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now, 256, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go b.run(ctx)
	for ctx.Err() == nil { // an /ingest every 20 ms
		b.nudge()
		time.Sleep(20 * time.Millisecond)
	}
	if n := emb.Calls(); n > 3 {
		t.Fatalf("a failing embedder was called %d times in 1 s despite the 5 s backoff", n)
	}
}

// A --vault sweep that finds another process sweeping the vault skips the
// round, writes nothing and records no sweep, logs that once (naming the
// holder) however many rounds it skips, and sweeps once the vault is free.
func TestBackgroundSweepSkipsAVaultBeingSwept(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	vault := t.TempDir()
	if err := os.WriteFile(filepath.Join(vault, "a.md"), []byte("**User:** ferns?\n\n**Assistant:** repot them in spring.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(vault)
	var logs syncBuffer
	b := newBackground(f.eng, f.st, f.emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(&logs, nil)), time.Now, 256, 0)
	b.sweepEvery = 10 * time.Minute
	skips := func() int { return strings.Count(logs.String(), "sweep skipped") }

	for round := range 2 {
		unlock, err := f.st.LockVault(ctx, abs, nil) // another sweep of the vault
		if err != nil {
			t.Fatal(err)
		}
		b.sweep(ctx, vault)
		b.sweep(ctx, vault)
		if n := skips(); n != round+1 {
			t.Fatalf("round %d: %d skip lines; want one per stretch of skipped rounds:\n%s", round, n, logs.String())
		}
		if !strings.Contains(logs.String(), fmt.Sprintf("process %d on ", os.Getpid())) || !strings.Contains(logs.String(), "next_try=\"in 10m0s\"") {
			t.Fatalf("the skip does not say who holds the vault and when it is tried again:\n%s", logs.String())
		}
		if round == 0 {
			if m, err := f.st.Manifest(ctx, recall.KindArchive, abs); err != nil || len(m) != 0 {
				t.Fatalf("a skipped sweep wrote %v (%v)", m, err)
			}
			if st, err := f.st.Stats(ctx); err != nil || st.LastSweep != nil {
				t.Fatalf("a skipped sweep was recorded: %+v (%v)", st.LastSweep, err)
			}
		}
		unlock()
		b.sweep(ctx, vault)
		if m, err := f.st.Manifest(ctx, recall.KindArchive, abs); err != nil || len(m) != 1 {
			t.Fatalf("round %d: the sweep after the vault was freed stored %v (%v)", round, m, err)
		}
	}
}

// The wait between looks for other processes' writes stretches with what a
// look that found nothing cost, never with the work of applying what one
// found: after catching up with a large sweep, the next change is found at
// the usual pace.
func TestFollowWaitStretchesWithLooksOnly(t *testing.T) {
	every := 2 * time.Second
	for _, c := range []struct {
		took time.Duration
		f    search.Followed
		want time.Duration
	}{
		{10 * time.Millisecond, search.Followed{}, every},
		{500 * time.Millisecond, search.Followed{}, 10 * time.Second},
		{3 * time.Second, search.Followed{Added: 38381}, every},
		{3 * time.Second, search.Followed{Removed: 1}, every},
		{3 * time.Second, search.Followed{Switched: "next"}, every},
	} {
		if got := followWait(every, c.took, c.f); got != c.want {
			t.Errorf("after a look of %s finding %+v: wait %s, want %s", c.took, c.f, got, c.want)
		}
	}
}

// flakySpaces fails its store's first Spaces call, as a dropped connection
// or an I/O error would.
type flakySpaces struct {
	recall.Store
	calls atomic.Int64
}

func (s *flakySpaces) Spaces(ctx context.Context) ([]recall.VectorSpace, error) {
	if s.calls.Add(1) == 1 {
		return nil, errors.New("disk I/O error")
	}
	return s.Store.Spaces(ctx)
}

// An index load that fails at start-up is tried again: one passing error
// does not leave a server without semantic search until it restarts.
func TestIndexLoadIsRetried(t *testing.T) {
	f := newFixture(t, nil)
	st := &flakySpaces{Store: f.st}
	eng := search.New(st, search.Options{Embedder: f.emb, MemoryLexical: true})
	b := newBackground(eng, st, f.emb, testSpace, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now, 256, 0)
	b.loadRetry = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); b.wg.Wait() }()
	go b.run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for b.index().State != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("index state %q after a failed first load (Spaces called %d times); want it loaded again", b.index().State, st.calls.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// When another process makes a new space the read space (`recall space
// use`) while background repair is stuck on the old space's model, failing
// and backing off, or waiting on a call that does not answer, repair moves
// to the new space at once: its missing vectors are embedded with its model
// without waiting out the old model's backoff (up to 5 min) or its call.
func TestBackgroundRepairFollowsASwitchAtOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		stuck func(*embedtest.Embedder)
		state string // the repair state that shows repair is stuck
	}{
		{"backing off", func(e *embedtest.Embedder) { e.FailOn(0, embedtest.FaultError) }, "retrying"},
		{"waiting on a call", func(e *embedtest.Embedder) { e.Delay = time.Hour }, "running"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "recall.db")
			st, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			other, err := sqlite.Open(ctx, path, sqlite.Options{}) // the process running `recall space use`
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			old := embedtest.New(64)
			c.stuck(old)
			if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: testSpace, Provider: "embedtest", Model: "word-hash", Dim: 64, Normalized: true}); err != nil {
				t.Fatal(err)
			}
			made := make(chan *embedtest.Embedder, 1)
			eng := search.New(st, search.Options{Embedder: old, MemoryLexical: true,
				SpaceEmbedder: func(ctx context.Context, sp recall.VectorSpace) (recall.Embedder, error) {
					e := embedtest.New(sp.Dim)
					made <- e
					return e, nil
				}})
			if err := eng.LoadIndex(ctx); err != nil {
				t.Fatal(err)
			}
			text := "a text without a vector"
			doc := recall.Document{Source: recall.Source{ID: "b.md", Kind: recall.KindArchive, Title: "t",
				ContentHash: recall.TextHash("x"), ChunkCount: 1, IndexState: recall.IndexPending},
				Chunks: []recall.Chunk{{Index: 0, Text: text, Header: "t", Hash: recall.TextHash(text)}}}
			if _, err := eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
				t.Fatal(err)
			}

			b := newBackground(eng, st, old, testSpace, newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now, 256, 0)
			b.followEvery = 10 * time.Millisecond
			b.repairRetry = 5 * time.Minute // a backoff far longer than this test may take
			rctx, cancel := context.WithCancel(ctx)
			defer func() { cancel(); b.wg.Wait() }()
			b.wg.Add(1)
			go func() { defer b.wg.Done(); b.run(rctx) }()
			if !until(func() bool { return old.Calls() > 0 && b.repairState().State == c.state }) {
				t.Fatalf("repair state %+v; want %s on the old model", b.repairState(), c.state)
			}

			if _, err := other.CreateSpace(ctx, recall.VectorSpace{Name: "u", Provider: "embedtest", Model: "word-hash", Dim: 24, Normalized: true}); err != nil {
				t.Fatal(err)
			}
			if err := other.UseSpace(ctx, "u"); err != nil {
				t.Fatal(err)
			}
			missing := func() int {
				stats, err := other.Stats(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range stats.Spaces {
					if s.Name == "u" {
						return s.Missing
					}
				}
				t.Fatal("no space u")
				return 0
			}
			if !until(func() bool { return missing() == 0 }) {
				t.Fatalf("space u still misses %d vectors 30 s after it became the read space; repair state %+v", missing(), b.repairState())
			}
			if e := <-made; e.Texts() == 0 {
				t.Errorf("the new space's model embedded nothing")
			}
			if r := b.repairState(); r.Space != "u" {
				t.Errorf("repair state %+v; want space u", r)
			}
		})
	}
}

// until polls cond until it holds and reports whether it did within 30 s:
// a bound on a failure, far above the milliseconds a pass takes, not a
// measure of speed.
func until(cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
