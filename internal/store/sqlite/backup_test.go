package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lockfile"
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

// A backup killed while it wrote (kill -9) left its copy so far, as large
// as the database, and VACUUM INTO's journal under hidden names beside
// its target, for good: each killed backup added another pair. The next
// backup into the folder removes them, found by their lock file, which the
// system released with the killed process; a backup still writing (its
// lock held, here by this test) is left alone.
func TestBackupRemovesWhatAKilledBackupLeft(t *testing.T) {
	db := openTest(t, Options{})
	writeFiller(t, db, 20)
	dir := t.TempDir()
	leave := func(name string) string {
		t.Helper()
		tmp := filepath.Join(dir, name)
		for _, f := range []string{tmp, tmp + "-journal", tmp + ".lock"} {
			if err := os.WriteFile(f, []byte("what the killed backup wrote"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return tmp
	}
	leave(".monday.db.123.partial") // killed: its lock file is there, held by nobody
	live := leave(".tuesday.db.456.partial")
	held, _, err := lockfile.TryLock(live+".lock", "a backup writing now", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()

	if err := db.Backup(ctx, filepath.Join(dir, "wednesday.db")); err != nil {
		t.Fatal(err)
	}
	names := folderNames(dir)
	want := []string{".tuesday.db.456.partial", ".tuesday.db.456.partial-journal", ".tuesday.db.456.partial.lock", "wednesday.db"}
	if !slices.Equal(names, want) {
		t.Errorf("after a backup the folder holds %q; want %q", names, want)
	}
}

// Backups of recall before 2026-12-03 wrote under the same hidden names
// with no lock: what one killed while it wrote left (a SQLite database
// and VACUUM INTO's journal) is removed by the next backup into the folder
// once a day old; a file of that name holding something else, or written
// lately, is left alone.
func TestBackupRemovesWhatAnOlderKilledBackupLeft(t *testing.T) {
	db := openTest(t, Options{})
	writeFiller(t, db, 20)
	dir := t.TempDir()
	old := time.Now().Add(-lockfile.LegacyAge - time.Hour)
	for _, f := range []struct {
		name, content string
		at            time.Time
	}{
		{".monday.db.3141592653.partial", sqliteHeader + "the rest of the copy", old},
		{".monday.db.3141592653.partial-journal", "its journal", old},
		{".tuesday.db.27.partial", sqliteHeader + "a backup of an older recall writing now", time.Now()},
		{".notes.txt.5.partial", "another program's", old},
	} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.at, f.at); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Backup(ctx, filepath.Join(dir, "wednesday.db")); err != nil {
		t.Fatal(err)
	}
	names := folderNames(dir)
	want := []string{".notes.txt.5.partial", ".tuesday.db.27.partial", "wednesday.db"}
	if !slices.Equal(names, want) {
		t.Errorf("after a backup the folder holds %q; want %q", names, want)
	}
}

// Backups taken while another goroutine keeps writing are each a
// consistent database: it opens, passes the integrity check (FTS5's index
// and the schema's invariants included), and holds whole write
// transactions only, never part of one.
func TestBackupUnderWriteLoad(t *testing.T) {
	db := openTest(t, Options{})
	const batch = 7
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for round := 0; ; round++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			var docs []recall.Document
			for i := range batch {
				text := fmt.Sprintf("load passage %d of round %d: %s", i, round, strings.Repeat("words to index ", i))
				docs = append(docs, recall.Document{
					Source: recall.Source{ID: fmt.Sprintf("load/%05d/%d.md", round, i), Kind: recall.KindArchive},
					Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}},
				})
			}
			if _, err := db.Write(ctx, docs, nil); err != nil {
				done <- err
				return
			}
		}
	}()
	dir := t.TempDir()
	for i := range 4 {
		path := filepath.Join(dir, fmt.Sprintf("backup-%d.db", i))
		if err := db.Backup(ctx, path); err != nil {
			close(stop)
			t.Fatal(err)
		}
		b, err := Open(ctx, path, Options{})
		if err != nil {
			t.Errorf("backup %d does not open: %v", i, err)
			continue
		}
		if err := b.IntegrityCheck(ctx); err != nil {
			t.Errorf("backup %d fails its integrity check: %v", i, err)
		}
		st, err := b.Stats(ctx)
		if err != nil || st.Chunks%batch != 0 {
			t.Errorf("backup %d holds %d chunks (%v): part of a write transaction", i, st.Chunks, err)
		}
		t.Logf("backup %d holds %d chunks", i, st.Chunks)
		b.Close()
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("writes during the backups: %v", err)
	}
}

// folderNames lists the names of the files in dir, in order.
func folderNames(dir string) []string {
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
