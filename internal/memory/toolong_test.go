package memory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// A memory with a passage the model refuses as too long is saved, pending
// with the provider's reason, and its other passages get their vectors
// (they failed with it before); a diary day and a reindex say the same.
// The refused passage is recorded, so a reindex does not send it again.
func TestTooLongPassageLeavesTheRestIndexed(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := embedtest.NewServer(t, 16, func(s string) bool { return strings.Contains(s, "zzlong") })
	emb, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL, Model: "m", Dim: 16, Limits: embed.Limits{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "t", Provider: "openai", Model: "m", Dim: 16, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	eng := search.New(st, search.Options{Embedder: emb, MemoryLexical: true})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	svc := New(st, eng, Options{Embedder: emb, Space: "t", Dim: 16, Chunk: chunk.Options{Size: 120}})
	para := func(word string) string { return strings.Repeat(word+" ", 12) }
	long := "zzlong " + para("plum") // the chunk after it overlaps it by its last word
	value := para("apple") + "\n\n" + long + "\n\n" + para("cherry")
	res, err := svc.Save(ctx, SaveRequest{Key: "note_fruit", Value: value}, Scope{})
	if err != nil {
		t.Fatal(err)
	}
	const why = "too long for the model"
	if res.Chunks < 3 || res.Index != recall.IndexPending || res.IndexError == nil || !strings.Contains(res.IndexError.Error(), why) {
		t.Fatalf("save: %+v; want pending with %q", res, why)
	}
	stats, err := st.Stats(ctx)
	if err != nil || stats.Spaces[0].Missing != 1 || stats.Spaces[0].Vectors != res.Chunks-1 {
		t.Errorf("space after the save: %+v, %v; want every chunk but the refused one embedded", stats.Spaces, err)
	}
	// The refusal is recorded: a reindex sends nothing (the other passages
	// have their vectors) and says why the memory stays pending.
	before := srv.Requests()
	if r, err := svc.Reindex(ctx, "note_fruit", ""); err != nil || r.Index != recall.IndexPending || r.IndexError == nil || !strings.Contains(r.IndexError.Error(), why) {
		t.Errorf("reindex: %+v, %v; want pending with %q", r, err, why)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("the reindex sent %d requests; want none (the passage was refused before)", n)
	}
	d, err := svc.WriteDiary(ctx, para("banana")+"\n\n"+long, "2025-01-02", "", false, Scope{})
	if err != nil || d.Index != recall.IndexPending || d.IndexError == nil || !strings.Contains(d.IndexError.Error(), why) {
		t.Errorf("diary: %+v, %v; want pending with %q", d, err, why)
	}
	if stats, _ := st.Stats(ctx); stats.Spaces[0].Missing != 2 {
		t.Errorf("after the diary day: %d texts missing, want 2 (the refused passages of the memory and of the day)", stats.Spaces[0].Missing)
	}
}
