package repair_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/repair"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// A text the provider refuses as too long for the model is passed at once,
// the texts batched with it embedded, and counted apart with the
// provider's words. The refusal is recorded in the store: no later run,
// of this process or another (here, the database opened again, as after a
// restart or by the next `recall repair`), sends it again, until a run
// with RetryRefused; a run with another model's embedder (another space)
// sends it.
func TestRepairRecordsTextsTooLongForTheModel(t *testing.T) {
	texts := []string{"zzlong passage"}
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("text %d", i))
	}
	srv := embedtest.NewServer(t, 4, func(s string) bool { return strings.Contains(s, "zzlong") })
	embedder := func(model string) recall.Embedder {
		emb, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL, Model: model, Dim: 4, Limits: embed.Limits{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return emb
	}
	emb := embedder("m")
	path := filepath.Join(t.TempDir(), "r.db")
	ctx := context.Background()
	st, eng := seedAt(t, path, texts, recall.VectorSpace{Name: "s", Provider: "openai", Model: "m", Dim: 4, Normalized: true})
	p, err := repair.Run(ctx, st, eng, "s", emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != 40 || p.Refused != 1 || p.TooLong != 1 || p.Missing != 1 || p.Refusals != 1 ||
		!strings.Contains(p.TooLongReason, "too long for the model") {
		t.Fatalf("first run: %+v, %v; want 40 embedded, the long text refused as too long", p, err)
	}
	// 16 texts, then halves to the long one (8+8, 4+4, 2+2, 1+1), then 16
	// and 9: no probe, no text sent alone but the long one.
	if n := srv.Requests(); n != 11 {
		t.Errorf("first run made %d requests, want 11", n)
	}
	st.Close()

	st, eng = seedAt(t, path, nil, recall.VectorSpace{})
	defer st.Close()
	before := srv.Requests()
	p, err = repair.Run(ctx, st, eng, "s", emb, repair.Options{})
	if err != nil || !p.Done || p.Embedded != 0 || p.TooLong != 1 || p.Missing != 1 || p.Refusals != 1 ||
		!strings.Contains(p.TooLongReason, "too long for the model") {
		t.Fatalf("run after reopening: %+v, %v", p, err)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("a run after reopening the database sent the refused text again (%d requests)", n)
	}

	before = srv.Requests()
	p, err = repair.Run(ctx, st, eng, "s", emb, repair.Options{RetryRefused: true})
	if err != nil || p.Forgotten != 1 || p.TooLong != 1 || p.Refusals != 1 || srv.Requests()-before != 1 {
		t.Errorf("a run with RetryRefused: %+v, %v, %d requests; want the text tried once more, and recorded again", p, err, srv.Requests()-before)
	}

	// Another model: another space, where nothing was refused yet.
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "s2", Provider: "openai", Model: "m2", Dim: 4, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	p, err = repair.Run(ctx, st, eng, "s2", embedder("m2"), repair.Options{})
	if err != nil || p.Embedded != 40 || p.TooLong != 1 || p.Refusals != 1 {
		t.Errorf("a run with another model: %+v, %v; want the long text tried (and refused) there too", p, err)
	}
}

// seedAt opens the database at path (the caller closes it), creating sp
// and writing texts as one source when texts is not nil.
func seedAt(t *testing.T, path string, texts []string, sp recall.VectorSpace) (*sqlite.DB, *search.Engine) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng := search.New(st, search.Options{})
	if texts == nil {
		return st, eng
	}
	if _, err := st.CreateSpace(ctx, sp); err != nil {
		t.Fatal(err)
	}
	doc := recall.Document{Source: recall.Source{ID: "src", Kind: recall.KindArchive, Title: "t",
		ContentHash: recall.TextHash(strings.Join(texts, "\n")), ChunkCount: len(texts), IndexState: recall.IndexOK}}
	for i, s := range texts {
		doc.Chunks = append(doc.Chunks, recall.Chunk{Index: i, Text: s, Header: "t", Hash: recall.TextHash(s)})
	}
	if _, err := eng.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	return st, eng
}
