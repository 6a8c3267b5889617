package ingest

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/store"
)

// gatedEmbedder holds its first call until release is closed, after
// saying on entered that a sweep is in the middle of its work.
type gatedEmbedder struct {
	*embedtest.Embedder
	entered chan struct{}
	release chan struct{}
}

func (g gatedEmbedder) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	select {
	case g.entered <- struct{}{}:
		<-g.release
	default:
	}
	return g.Embedder.Embed(ctx, kind, texts)
}

// Two sweeps of one vault into one database, through two handles as two
// processes have: while one is embedding, the other does none of the work
// again. Without the vault's lock, the second parsed, embedded and wrote
// every file while the first was still at it.
func TestOneSweepOfAVaultAtATime(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	a := openAt(t, path)
	b := openAt(t, path)
	sp, err := a.CreateSpace(ctx, recall.VectorSpace{Name: "test", Provider: "test", Model: "test", Dim: 16, Normalized: true})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write(t, root, "a.md", convA)
	write(t, root, "b.md", convB)

	first := gatedEmbedder{embedtest.New(16), make(chan struct{}, 1), make(chan struct{})}
	done := make(chan error)
	go func() {
		_, err := Sweep(ctx, a, a, root, Options{Embedder: first, Space: sp.Name, Workers: 1})
		done <- err
	}()
	<-first.entered

	second := embedtest.New(16)
	res, err := Sweep(ctx, b, b, root, Options{Embedder: second, Space: sp.Name})
	if recall.ErrorCode(err) != recall.ECONFLICT || !errors.Is(err, store.ErrVaultBusy) {
		t.Fatalf("a second sweep while the first embeds: %+v, %v; want the vault's lock refused", res, err)
	}
	if res.FilesChanged != 0 || second.Calls() != 0 {
		t.Fatalf("the refused sweep did work: %+v, %d embedder calls", res, second.Calls())
	}
	// A dry run writes nothing: it neither waits nor is refused.
	if res, err := Sweep(ctx, b, b, root, Options{DryRun: true}); err != nil || res.FilesChanged != 2 {
		t.Fatalf("dry run beside a sweep: %+v, %v", res, err)
	}

	// A sweep interrupted while it waits never began: ErrNotSwept, with
	// the interruption, and nothing to record.
	wctx, cancel := context.WithCancel(ctx)
	res, err = Sweep(wctx, b, b, root, Options{Embedder: second, Space: sp.Name, Wait: func(error) { cancel() }})
	if !errors.Is(err, ErrNotSwept) || !errors.Is(err, context.Canceled) || !res.Started.IsZero() {
		t.Fatalf("a sweep interrupted while it waits: %+v, %v; want ErrNotSwept and context.Canceled", res, err)
	}

	// A sweep that waits runs once the first is done, and finds its work
	// done.
	waiting := make(chan error, 1)
	waited := make(chan Result)
	go func() {
		res, err := Sweep(ctx, b, b, root, Options{Embedder: second, Space: sp.Name, Wait: func(busy error) { waiting <- busy }})
		if err != nil {
			t.Errorf("waiting sweep: %v", err)
		}
		waited <- res
	}()
	if busy := <-waiting; !errors.Is(busy, store.ErrVaultBusy) {
		t.Fatalf("told to wait with %v", busy)
	}
	waitedFrom := time.Now()
	close(first.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	res = <-waited
	if res.FilesChanged != 0 || res.FilesSkipped != 2 || second.Calls() != 0 {
		t.Fatalf("the sweep that waited: %+v, %d embedder calls; want everything unchanged", res, second.Calls())
	}
	if !res.Started.After(waitedFrom) {
		t.Errorf("the sweep that waited says it started at %v, before the first sweep ended (%v): its time includes the wait", res.Started, waitedFrom)
	}
}
