package search_test

import (
	"context"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/search"
)

// TestGuardRefusedWriteKeepsIndexAndStoreAlike: a guarded Engine.Write
// whose guard refuses every document once stored the vectors it carried
// (texts the kept copies hold) and settled their sources "ok", while its
// WriteResult, empty, left the running engine's vector index without them:
// a freshly loaded engine found the source by vector, the running one did
// not. The refused document's vectors are now left out with it.
func TestGuardRefusedWriteKeepsIndexAndStoreAlike(t *testing.T) {
	ctx := context.Background()
	st, emb := newSpaceStore(t, 32)
	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	// Another text with its vector, so the index is not empty.
	writeDocs(t, eng, emb, doc("other.md", "a recipe for sourdough bread"))
	text := "the spare key is under the blue flowerpot"
	d := doc("a.md", text)
	d.Source.IndexState = recall.IndexPending
	if _, err := eng.Write(ctx, []recall.Document{d}, nil); err != nil {
		t.Fatal(err)
	}
	v, err := embed.EmbedChunks(ctx, emb, emb.Info().Dim, []embed.ChunkText{{Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	refuse := recall.WithWriteGuard(ctx, func(*recall.Source, *recall.Document) bool { return false })
	if _, err := eng.Write(refuse, []recall.Document{d}, []recall.Vector{{Space: "t", Key: d.Chunks[0].Hash, Vec: v[0]}}); err != nil {
		t.Fatal(err)
	}
	src, err := st.Source(ctx, "a.md")
	if err != nil {
		t.Fatal(err)
	}
	req := recall.SearchRequest{Query: "blue flowerpot", Mode: recall.ModeSemantic}
	fresh := search.New(st, search.Options{Embedder: emb})
	if err := fresh.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	found := func(e *search.Engine) bool {
		r, err := e.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range r.Results {
			if h.Source == "a.md" {
				return true
			}
		}
		return false
	}
	inRunning, inFresh := found(eng), found(fresh)
	if inRunning != inFresh {
		t.Errorf("after a write whose guard refused every document (a.md stored as %q): the running engine finds a.md by vector: %t; a freshly loaded one: %t",
			src.IndexState, inRunning, inFresh)
	}
}
