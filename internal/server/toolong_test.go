package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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

// repair_archive (and POST /admin/repair) sends a text the model refused
// for its size again only when asked (retry_refused), as `recall repair
// --retry-refused` does: a plain call passes it without a request even
// after the limit was raised; a call with retry_refused forgets the
// refusal and sends it. Only the CLI could send it again.
func TestAdminRepairRetriesRefusedTextsWhenAsked(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	srv := embedtest.NewServer(t, 16, func(s string) bool { return refuse.Load() && strings.Contains(s, "zzlong") })
	f := newFixture(t, func(o *Options) {
		if _, err := o.Store.CreateSpace(context.Background(), recall.VectorSpace{Name: "long", Provider: "openai", Model: "m", Dim: 16, Normalized: true}); err != nil {
			t.Fatal(err)
		}
		emb, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL, Model: "m", Dim: 16, Limits: embed.Limits{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		o.Embedder, o.Space = emb, "long"
	})
	doc := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash("a"), ChunkCount: 2, IndexState: recall.IndexOK}}
	for i, s := range []string{"zzlong passage", "a fine passage"} {
		doc.Chunks = append(doc.Chunks, recall.Chunk{Index: i, Text: s, Header: "t", Hash: recall.TextHash(s)})
	}
	if _, err := f.eng.Write(context.Background(), []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	cs := f.connect(adminTok)
	repairCall := func(step string, args map[string]any) (RepairOutput, int) {
		t.Helper()
		before := srv.Requests()
		out, _ := mustCall[RepairOutput](t, cs, "repair_archive", args)
		t.Logf("%s: %+v", step, out)
		return out, srv.Requests() - before
	}

	out, _ := repairCall("first", map[string]any{})
	if out.Embedded != 1 || out.Missing != 1 || out.TooLong != 1 || !out.Done || !strings.Contains(out.Note, "still without a vector: 1 refused for size") {
		t.Fatalf("first call: %+v; want one text embedded, one refused for its size and counted so", out)
	}
	refuse.Store(false) // the limit was raised
	out, n := repairCall("plain", map[string]any{})
	if n != 0 || out.Embedded != 0 || out.Missing != 1 || out.TooLong != 1 || out.Forgotten != 0 {
		t.Errorf("a call without retry_refused: %+v after %d requests; want the refused text passed without one", out, n)
	}
	out, n = repairCall("retry", map[string]any{"retry_refused": true})
	if n == 0 || out.Embedded != 1 || out.Missing != 0 || out.TooLong != 0 || out.Forgotten != 1 || !out.Done {
		t.Errorf("a call with retry_refused: %+v after %d requests; want the refused text sent again and embedded", out, n)
	}

	// POST /admin/repair takes it alike.
	doc.Source.ID, doc.Source.ContentHash = "b.md", recall.TextHash("b")
	doc.Chunks = []recall.Chunk{{Index: 0, Text: "zzlong second", Header: "u", Hash: recall.TextHash("zzlong second")}}
	doc.Source.ChunkCount = 1
	if _, err := f.eng.Write(context.Background(), []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	refuse.Store(true)
	if _, n := repairCall("second text", map[string]any{}); n == 0 {
		t.Fatal("the second text was not sent")
	}
	refuse.Store(false)
	for _, body := range []string{`{}`, `{"retry_refused": true}`} {
		before := srv.Requests()
		resp, got := f.do("POST", "/admin/repair", adminTok, body)
		var rest RepairOutput
		if err := json.Unmarshal([]byte(got), &rest); resp.StatusCode != 200 || err != nil {
			t.Fatalf("POST /admin/repair %s: %d %s", body, resp.StatusCode, got)
		}
		sent := srv.Requests() - before
		if retry := strings.Contains(body, "true"); retry != (sent > 0) || retry != (rest.Forgotten == 1 && rest.Missing == 0) {
			t.Errorf("POST /admin/repair %s: %s after %d requests", body, got, sent)
		}
	}
}
