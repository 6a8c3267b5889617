package server

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
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
