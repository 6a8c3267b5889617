package sqlite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

// A backup is a database that opens as it is, with the sources, chunks,
// full text and vectors the original held when it was made, while the
// original goes on being written; it never replaces a file, nor leaves a
// partial one behind.
func TestBackup(t *testing.T) {
	db := openTest(t, Options{})
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "sp", Provider: "p", Model: "m", Dim: 2, Normalized: true}); err != nil {
		t.Fatal(err)
	}
	doc := oneChunk("a.md", "the lighthouse keeper")
	if _, err := db.Write(ctx, []recall.Document{doc}, []recall.Vector{{Space: "sp", Key: doc.Chunks[0].Hash, Vec: []float32{0.6, 0.8}}}); err != nil {
		t.Fatal(err)
	}
	writeFiller(t, db, 50)
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.db")
	if err := db.Backup(ctx, path); err != nil {
		t.Fatal(err)
	}
	writeFiller(t, db, 60) // after the backup: not in it

	b, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("the backup does not open: %v", err)
	}
	defer b.Close()
	if err := b.IntegrityCheck(ctx); err != nil {
		t.Errorf("the backup fails its integrity check: %v", err)
	}
	st, err := b.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Chunks != 51 {
		t.Errorf("the backup holds %d chunks, want the 51 written before it", st.Chunks)
	}
	vecs, err := b.VectorsByKey(ctx, "sp", []string{doc.Chunks[0].Hash})
	if err != nil || !slices.Equal(vecs[doc.Chunks[0].Hash], []float32{0.6, 0.8}) {
		t.Errorf("the backup's vector: %v %v", vecs, err)
	}
	hits, err := b.Lexical(ctx, recall.LexicalQuery{Text: "lighthouse", Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("the backup's full text: %v %v", hits, err)
	}

	for _, p := range []string{path, db.Path()} {
		if err := db.Backup(ctx, p); err == nil {
			t.Errorf("a backup onto %s was made", p)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "partial") {
			t.Errorf("a partial backup was left: %s", e.Name())
		}
	}
}
