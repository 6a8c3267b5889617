package ingest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/search"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// fernExport is a Claude export of conversations titled as given, dated
// 2025-01-02, each holding the same two messages, whose text alone the
// chunks hold: the title and date are their header.
func fernExport(titles ...string) string {
	out := "["
	for i, title := range titles {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprintf(`{"uuid":"u-%d","name":%q,"created_at":"2025-01-02T10:00:00Z","chat_messages":[
 {"sender":"human","text":"How do I repot a fern?"},{"sender":"assistant","text":"Gently, in spring, one size up."}]}`, i, title)
	}
	return out + "]"
}

// wantOwnVectors checks that every chunk of the sources holds, under its
// vector key, the embedding of its own header and text, and that the space
// holds no other vector.
func wantOwnVectors(t *testing.T, st *sqlite.DB, emb *embedtest.Embedder, space string, sources ...string) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for _, id := range sources {
		chunks, err := st.Chunks(ctx, id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			k := c.VectorKey()
			keys = append(keys, k)
			stored, err := st.VectorsByKey(ctx, space, []string{k})
			if err != nil {
				t.Fatal(err)
			}
			want, err := embed.EmbedChunks(ctx, emb, 16, []embed.ChunkText{{Header: c.Header, Text: c.Text}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(stored[k], want[0]) {
				t.Errorf("%s chunk %d (header %q): the stored vector is not the embedding of its header and text", id, c.Index, c.Header)
			}
		}
	}
	held, err := st.VectorKeys(ctx, space)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	slices.Sort(held)
	if !slices.Equal(held, slices.Compact(keys)) {
		t.Errorf("the space holds %d vectors; want exactly the %d of the chunks' keys", len(held), len(slices.Compact(keys)))
	}
}

// A conversation retitled with the same passages is embedded again: its
// header (title and date) is embedded with each passage, so the vector made
// with the old title is gone and each chunk has the new one's.
func TestSweepRetitledConversationEmbedsAgain(t *testing.T) {
	st := openStore(t)
	emb, space := embedSpace(t, st)
	root := t.TempDir()
	const id = "claude.json/u-0"
	write(t, root, "claude.json", fernExport("Houseplants"))
	sweep(t, st, root, Options{Embedder: emb, Space: space, Dim: 16})
	old, err := st.Chunks(context.Background(), id, 0, 100)
	if err != nil || len(old) == 0 {
		t.Fatalf("chunks: %+v, %v", old, err)
	}
	wantOwnVectors(t, st, emb, space, id)

	before := emb.Texts()
	write(t, root, "claude.json", fernExport("Ferns, repotted"))
	res, log := sweep(t, st, root, Options{Embedder: emb, Space: space, Dim: 16})
	if res.FilesChanged != 1 || res.VectorsMissing != 0 || log != "" {
		t.Fatalf("sweep of the retitled conversation: %+v %q", res, log)
	}
	chunks, err := st.Chunks(context.Background(), id, 0, 100)
	if err != nil || len(chunks) != len(old) || chunks[0].Header != "Ferns, repotted (2025-01-02)" || chunks[0].Hash != old[0].Hash {
		t.Fatalf("chunks after retitling: %+v, %v; want the same texts under the new title", chunks, err)
	}
	if emb.Texts() == before {
		t.Error("nothing was embedded for the retitled conversation")
	}
	wantOwnVectors(t, st, emb, space, id)
}

// One passage in two conversations of different titles gets a vector for
// each (each embedded with its own header); a search still collapses them
// into one result, the other named in also_in.
func TestSweepSamePassageUnderTwoTitles(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	emb, space := embedSpace(t, st)
	root := t.TempDir()
	write(t, root, "claude.json", fernExport("Houseplants", "Ferns"))
	sweep(t, st, root, Options{Embedder: emb, Space: space, Dim: 16})
	wantOwnVectors(t, st, emb, space, "claude.json/u-0", "claude.json/u-1")
	a, _ := st.Chunks(ctx, "claude.json/u-0", 0, 0)
	b, _ := st.Chunks(ctx, "claude.json/u-1", 0, 0)
	if len(a) != 1 || len(b) != 1 || a[0].Hash != b[0].Hash || a[0].VectorKey() == b[0].VectorKey() {
		t.Fatalf("chunks: %+v %+v; want one text under two vector keys", a, b)
	}

	eng := search.New(st, search.Options{Embedder: emb})
	if err := eng.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{recall.ModeSemantic, recall.ModeHybrid} {
		r, err := eng.Search(ctx, recall.SearchRequest{Query: "repot a fern", Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) != 1 || len(r.Results[0].AlsoIn) != 1 {
			t.Errorf("%s search: %+v; want the passage once, the other file in also_in", mode, r.Results)
		}
	}
}
