package ingest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// interleavingWriter is a sweep's writer with another writer's write made
// just before each of the sweep's Deletes: after the sweep read the store
// and decided what is gone, before it removes it.
type interleavingWriter struct {
	*sqlite.DB
	meanwhile func()
}

func (w *interleavingWriter) Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error) {
	if w.meanwhile != nil {
		w.meanwhile()
		w.meanwhile = nil
	}
	return w.DB.Delete(ctx, ids...)
}

// A source whose file is gone, but that another writer stores again while
// the sweep runs (an /ingest upload from a remote sweep, an import,
// another process's sweep), is that writer's: the sweep, which found it
// gone before the write, keeps it and says so (Result.Kept), and removes
// the rest. It removed it with the rest, whether pruned (--prune) or the
// record of a file that held no conversation forgotten.
func TestPruneKeepsSourcesWrittenSinceTheSweepRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prune bool
		id    string // gone from the vault, written again meanwhile
		vault bool   // written again with the vault (another sweep), or none (/ingest)
	}{
		{"prune, uploaded", true, "b.md", false},
		{"prune, swept by another", true, "b.md", true},
		{"forget, uploaded", false, "empty.md", false},
		{"forget, swept by another", false, "empty.md", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, "a.md", convA)
			write(t, root, "b.md", convB)
			write(t, root, "c.md", "User: where do swifts sleep\n\nAssistant: on the wing.\n")
			write(t, root, "empty.md", "")
			write(t, root, "empty2.md", "")
			st := openStore(t)
			opt := Options{Prune: tc.prune}
			if res, log := sweep(t, st, root, opt); res.FilesChanged != 3 || log != "" {
				t.Fatalf("first sweep: %+v %q", res, log)
			}
			abs, err := VaultPath(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"b.md", "c.md", "empty.md", "empty2.md"} {
				removeFile(t, root, f)
			}

			text := "User: is this the new copy\n\nAssistant: yes, written while the sweep ran.\n"
			fresh := recall.Document{
				Source: recall.Source{ID: tc.id, Kind: recall.KindArchive, Title: "new copy", ContentHash: recall.TextHash(text),
					Size: int64(len(text)), MTime: 1, Reading: ReadingVersion, IndexState: recall.IndexPending},
				Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}},
			}
			if tc.vault {
				fresh.Source.Vault = abs
			}
			w := &interleavingWriter{DB: st, meanwhile: func() {
				if _, err := st.Write(context.Background(), []recall.Document{fresh}, nil); err != nil {
					t.Errorf("the other writer's write: %v", err)
				}
			}}
			res, err := Sweep(context.Background(), st, w, root, opt)
			if err != nil {
				t.Fatalf("sweep: %v", err)
			}
			if w.meanwhile != nil {
				t.Fatal("the sweep made no Delete")
			}
			if !slices.Equal(res.Kept, []string{tc.id}) || res.SourcesKept != 1 {
				t.Errorf("Result.Kept = %q (%d); want %s, written after the sweep read it", res.Kept, res.SourcesKept, tc.id)
			}
			got, err := st.Source(context.Background(), tc.id)
			if err != nil {
				t.Fatalf("%s, written while the sweep ran, is gone: %v", tc.id, err)
			}
			if got.ContentHash != fresh.Source.ContentHash || got.Vault != fresh.Source.Vault {
				t.Errorf("%s is %+v; want the other writer's copy", tc.id, got)
			}
			// The rest goes as ever.
			m, err := st.Manifest(context.Background(), recall.KindArchive, abs)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for id := range m {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			want := []string{"a.md", "b.md", "c.md"} // without --prune, the conversations stay
			if tc.prune {
				want = []string{"a.md"}
			}
			if tc.vault && !slices.Contains(want, tc.id) {
				want = append(want, tc.id)
				slices.Sort(want)
			}
			if !slices.Equal(ids, want) {
				t.Errorf("the vault's sources after the sweep: %q; want %q", ids, want)
			}
		})
	}
}

// removeFile deletes the vault file rel.
func removeFile(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}
