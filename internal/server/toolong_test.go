package server

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// The background repair sends a text the model refused as too long once:
// later rounds (each new write wakes one) embed the new texts without it,
// and the repair state counts it with the provider's reason. It was sent
// again, with the texts batched beside it, every round for ever; then,
// remembered in memory, once more by every server started. The refusal is
// recorded in the store: a server started afterwards sends nothing and
// shows the count and the reason.
func TestBackgroundRepairStopsSendingATooLongText(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if _, err := f.st.CreateSpace(ctx, recall.VectorSpace{Name: "long", Provider: "openai", Model: "m", Dim: 16, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	srv := embedtest.NewServer(t, 16, func(s string) bool { return strings.Contains(s, "zzlong") })
	emb, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL, Model: "m", Dim: 16, Limits: embed.Limits{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(id string, texts ...string) {
		t.Helper()
		doc := recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, Title: "t",
			ContentHash: recall.TextHash(strings.Join(texts, "\n")), ChunkCount: len(texts), IndexState: recall.IndexOK}}
		for i, s := range texts {
			doc.Chunks = append(doc.Chunks, recall.Chunk{Index: i, Text: s, Header: "t", Hash: recall.TextHash(s)})
		}
		if _, err := f.eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
			t.Fatal(err)
		}
	}
	write("a.md", "zzlong passage", "a fine passage")
	// start runs a server's background work; stop ends it.
	start := func() (b *background, stop func()) {
		b = newBackground(f.eng, f.st, emb, "long", newMetrics(), slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now, 256, 0)
		b.idle = time.Hour // rounds come only from nudges
		runCtx, cancel := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() { defer close(ran); b.run(runCtx) }()
		var once sync.Once
		stop = func() { once.Do(func() { cancel(); <-ran; b.wg.Wait() }) }
		t.Cleanup(stop)
		return b, stop
	}
	b, stop := start()
	if !until(func() bool { r := b.repairState(); return r.State == "idle" && r.TooLong == 1 && r.Missing == 1 }) {
		t.Fatalf("repair state %+v; want idle, one text too long, missing", b.repairState())
	}
	if r := b.repairState(); !strings.Contains(r.TooLongReason, "too long for the model") {
		t.Errorf("repair state %+v; want the provider's reason", r)
	}
	missing := func() int {
		p, err := f.st.MissingVectors(ctx, "long", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(p)
	}
	for i, text := range []string{"a second passage", "a third passage"} {
		before := srv.Requests()
		write("b"+text+".md", text)
		b.nudge()
		if !until(func() bool { return missing() == 1 && b.repairState().State == "idle" }) {
			t.Fatalf("round %d: %d texts missing, state %+v; want the new text embedded", i, missing(), b.repairState())
		}
		if n := srv.Requests() - before; n != 1 {
			t.Errorf("round %d made %d requests; want 1, for the new text alone", i, n)
		}
	}

	stop()

	// A server started again on the same store.
	before := srv.Requests()
	b, _ = start()
	if !until(func() bool { r := b.repairState(); return r.State == "idle" && r.TooLong == 1 }) {
		t.Fatalf("restarted: repair state %+v; want idle, one text too long", b.repairState())
	}
	if r := b.repairState(); !strings.Contains(r.TooLongReason, "too long for the model") {
		t.Errorf("restarted: repair state %+v; want the provider's reason", r)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("the restarted server's repair made %d requests; want none (the refused text is recorded)", n)
	}
}
