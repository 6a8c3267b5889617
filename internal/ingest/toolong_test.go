package ingest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
	"github.com/recall-mcp/recall/internal/repair"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// tooLongSetup opens a store with a space whose model, served by srv,
// refuses the texts that hold "zzlong" as too long for it.
func tooLongSetup(t *testing.T) (*sqlite.DB, *embedtest.Server, recall.Embedder, recall.VectorSpace) {
	t.Helper()
	st := openStore(t)
	srv := embedtest.NewServer(t, 16, func(s string) bool { return strings.Contains(s, "zzlong") })
	emb, err := embed.NewOpenAI(embed.OpenAIConfig{BaseURL: srv.URL, Model: "m", Dim: 16, Prefixes: &embed.Prefixes{},
		Limits: embed.Limits{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := st.CreateSpace(context.Background(), recall.VectorSpace{Name: "s", Provider: "openai", Model: "m", Dim: 16, Normalized: true})
	if err != nil {
		t.Fatal(err)
	}
	return st, srv, emb, sp
}

// A text the model refuses as too long fails only its own chunk: the
// other chunks batched with it get their vectors, no outage is declared
// (the next files are embedded too), and the sweep log names the file and
// chunk with the provider's reason. The file is stored pending: searchable
// by its words, with one vector missing.
func TestSweepIsolatesATextTooLongForTheModel(t *testing.T) {
	ctx := context.Background()
	st, srv, emb, sp := tooLongSetup(t)
	root := t.TempDir()
	for i := range 30 {
		body := fmt.Sprintf("**User:** question %d about bread\n\n**Assistant:** answer %d about rye", i, i)
		if i == 7 {
			body = "**User:** zzlong " + strings.Repeat("crumb ", 40)
		}
		write(t, root, fmt.Sprintf("f%02d.md", i), body)
	}
	res, log := sweep(t, st, root, Options{Embedder: emb, Space: sp.Name, Dim: 16})
	if res.FilesChanged != 30 || res.VectorsMissing != 1 {
		t.Errorf("sweep: %+v; want 30 files stored and one vector missing", res)
	}
	if !strings.Contains(log, "f07.md") || !strings.Contains(log, "too long for the model") || strings.Contains(log, "tried again in") {
		t.Errorf("sweep log %q; want f07.md's chunk named as too long for the model, and no outage", log)
	}
	stats, err := st.Stats(ctx)
	if err != nil || len(stats.Spaces) != 1 || stats.Spaces[0].Missing != 1 {
		t.Fatalf("stats %+v, %v; want one vector missing", stats.Spaces, err)
	}
	for id, want := range map[string]string{"f07.md": recall.IndexPending, "f06.md": recall.IndexOK, "f08.md": recall.IndexOK} {
		src, err := st.Source(ctx, id)
		if err != nil || src.IndexState != want {
			t.Errorf("%s: state %q, %v; want %q", id, src.IndexState, err, want)
		}
	}
	if cands, err := st.Lexical(ctx, recall.LexicalQuery{Text: "zzlong", Limit: 5}); err != nil || len(cands) != 1 {
		t.Errorf("the refused chunk by its words: %v, %v", cands, err)
	}
	if stats.Spaces[0].TooLong != 1 {
		t.Errorf("stats too_long = %d; want the refusal recorded", stats.Spaces[0].TooLong)
	}

	// The same file in another vault (and folder, as a source id is a
	// path in its vault): its text is not sent again (the
	// refusal is recorded in the store), and the log says why it has no
	// vector.
	other := t.TempDir()
	write(t, other, "again/f07.md", "**User:** zzlong "+strings.Repeat("crumb ", 40))
	before := srv.Requests()
	res, log = sweep(t, st, other, Options{Embedder: emb, Space: sp.Name, Dim: 16})
	if res.FilesChanged != 1 || res.VectorsMissing != 1 || !strings.Contains(log, "too long for the model") {
		t.Errorf("second sweep: %+v, log %q; want the file stored pending, the refusal logged", res, log)
	}
	if n := srv.Requests() - before; n != 0 {
		t.Errorf("the second sweep sent %d requests; want none (the text was refused before)", n)
	}
}

// dropFirst is a sweep's writer that, before its first write, removes the
// sources ids from the store as another process's write would, between
// the sweep's embedding (which recorded its refusals) and its commit.
type dropFirst struct {
	*sqlite.DB
	ids  []string
	done bool
}

func (w *dropFirst) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	if !w.done {
		w.done = true
		if _, _, err := w.DB.Delete(ctx, w.ids...); err != nil {
			return recall.WriteResult{}, err
		}
	}
	return w.DB.Write(ctx, docs, vecs, remove...)
}

// A refusal the sweep records before its chunk commits, or found recorded
// before, survives another write, in between, that removes the last other
// chunk holding the text (a write drops the refusals no chunk holds): the
// sweep records it again once its chunk holds the text, so that no process
// sends it again.
func TestSweepKeepsARefusalDroppedBeforeItsChunkCommits(t *testing.T) {
	for _, known := range []bool{false, true} {
		t.Run(map[bool]string{false: "new", true: "known"}[known], func(t *testing.T) {
			ctx := context.Background()
			st, srv, emb, sp := tooLongSetup(t)
			long := "**User:** zzlong " + strings.Repeat("crumb ", 40)
			// The text is stored first: without an embedder (no refusal
			// yet: the sweep below records it), or with one (the sweep
			// below finds it recorded).
			first := t.TempDir()
			write(t, first, "f07.md", long)
			opt := Options{Space: sp.Name, Dim: 16}
			if known {
				opt.Embedder = emb
			}
			sweep(t, st, first, opt)

			other := t.TempDir()
			write(t, other, "again/f07.md", long)
			var log bytes.Buffer
			w := &dropFirst{DB: st, ids: []string{"f07.md"}}
			sent := srv.Requests()
			res, err := Sweep(ctx, st, w, other, Options{Embedder: emb, Space: sp.Name, Dim: 16, Failures: &log})
			if err != nil || res.FilesChanged != 1 || res.VectorsMissing != 1 || !w.done {
				t.Fatalf("sweep: %+v, %v; want the file stored, its text refused", res, err)
			}
			if n := srv.Requests() - sent; (n == 0) != known {
				t.Fatalf("the sweep sent %d requests; want one only if the text was not refused before", n)
			}
			if _, err := st.Source(ctx, "f07.md"); err == nil {
				t.Fatal("the first vault's source was not removed before the commit")
			}
			stats, err := st.Stats(ctx)
			if err != nil || stats.Spaces[0].TooLong != 1 {
				t.Errorf("stats %+v, %v; want the refusal kept (too_long 1)", stats.Spaces, err)
			}
			sent = srv.Requests()
			if p, err := repair.Run(ctx, st, st, sp.Name, emb, repair.Options{}); err != nil || p.TooLong != 1 {
				t.Errorf("repair: %+v, %v; want the text passed as refused", p, err)
			}
			if n := srv.Requests() - sent; n != 0 {
				t.Errorf("repair sent %d requests; want none (the refusal is recorded)", n)
			}
		})
	}
}
