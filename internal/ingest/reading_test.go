package ingest

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
)

// setReading records reading on every source of the database at path, as
// an older recall's sweep left them (0: one from before the reading was
// recorded).
func setReading(t *testing.T, path string, reading int) {
	t.Helper()
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`UPDATE sources SET reading = ?`, reading); err != nil {
		t.Fatal(err)
	}
}

// readings counts the vault's sources by the reading they record.
func readings(t *testing.T, st recall.Store, root string) map[int]int {
	t.Helper()
	abs, _ := VaultPath(root)
	m, err := st.Manifest(context.Background(), recall.KindArchive, abs)
	if err != nil {
		t.Fatal(err)
	}
	n := map[int]int{}
	for _, s := range m {
		n[s.Reading]++
	}
	return n
}

// An upgrade: files swept by an older reading are read again though
// unchanged; what reads as before keeps its chunks and vectors (nothing is
// embedded or added for it), what reads differently is made anew, and the
// sweep after that skips every file again.
func TestSweepRereadsOlderReading(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recall.db")
	st := openAt(t, path)
	emb, space := embedSpace(t, st)
	root := t.TempDir()
	write(t, root, "2025/07/a.md", convA)
	write(t, root, "b.txt", convB)
	write(t, root, "exports/claude.json", export)
	long := "**User:** " + strings.Repeat("Tell me about rye bread and its crust. ", 12) +
		"\n\n**Assistant:** " + strings.Repeat("Rye bread has a dense crumb and a dark crust. ", 12)
	write(t, root, "long.md", long)
	sweep(t, st, root, Options{Embedder: emb, Space: space, Dim: 16})
	setReading(t, path, 0) // swept before the reading was recorded

	var told []int
	rereading := func(files []string) { told = append(told, len(files)) }
	dry, _ := sweep(t, st, root, Options{DryRun: true, Rereading: rereading})
	if len(told) != 1 || told[0] != 4 || dry.FilesChanged != 4 || readings(t, st, root)[0] != 5 {
		t.Fatalf("dry run: told %v, %+v, readings %v; want it to say 4 files would be read again and write nothing", told, dry, readings(t, st, root))
	}

	// Every file reads as before: nothing is embedded, no chunk added.
	told = nil
	embedded := emb.Texts()
	w := &countingWriter{DB: st}
	res, err := Sweep(context.Background(), st, w, root, Options{Embedder: emb, Space: space, Dim: 16, Rereading: rereading})
	if err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0] != 4 || res.FilesChanged != 4 || res.FilesSkipped != 0 {
		t.Errorf("re-read: told %v, %+v; want the 4 files read again, said once", told, res)
	}
	if got := emb.Texts() - embedded; got != 0 || w.added != 0 {
		t.Errorf("a re-read of text that reads the same embedded %d texts and added %d chunks; want none", got, w.added)
	}
	if r := readings(t, st, root); r[ReadingVersion] != 5 || len(r) != 1 {
		t.Errorf("readings after the re-read: %v; want all 5 sources at %d", r, ReadingVersion)
	}
	told = nil
	again, _ := sweep(t, st, root, Options{Embedder: emb, Space: space, Dim: 16, Rereading: rereading})
	if len(told) != 0 || again.FilesSkipped != 4 || again.FilesChanged != 0 {
		t.Errorf("the sweep after: told %v, %+v; want every file skipped", told, again)
	}

	// A reading that differs for one file, played by smaller chunks (long.md
	// chunks differently, the other files alike): only its chunks are new.
	setReading(t, path, ReadingVersion-1)
	embedded, w.added = emb.Texts(), 0
	if _, err := Sweep(context.Background(), st, w, root, Options{Embedder: emb, Space: space, Dim: 16, Chunk: chunk.Options{Size: 300}}); err != nil {
		t.Fatal(err)
	}
	src, err := st.Source(context.Background(), "long.md")
	if err != nil {
		t.Fatal(err)
	}
	if src.ChunkCount < 2 || w.added != src.ChunkCount || emb.Texts() == embedded {
		t.Errorf("long.md read anew into %d chunks: %d chunks added, %d texts embedded; want its chunks alone added and embedded",
			src.ChunkCount, w.added, emb.Texts()-embedded)
	}

	// A newer reading (an older binary sweeping after an upgrade) is left
	// as it is: two versions sweeping one vault never undo each other.
	setReading(t, path, ReadingVersion+1)
	told = nil
	newer, _ := sweep(t, st, root, Options{Rereading: rereading})
	if len(told) != 0 || newer.FilesSkipped != 4 {
		t.Errorf("a newer reading: told %v, %+v; want every file skipped", told, newer)
	}
}

// A re-read cut short records the new reading only on the files it
// committed; the next sweep reads the others again, and a file that fails
// keeps its old reading, to be read again by every sweep.
func TestSweepRereadInterruptedOrFailed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recall.db")
	st := openAt(t, path)
	root := t.TempDir()
	for i := range 20 {
		write(t, root, "n/"+string(rune('a'+i))+".md", note(i))
	}
	sweep(t, st, root, Options{})
	setReading(t, path, 0)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Sweep(ctx, st, &countingWriter{DB: st, cancelAfter: 1, cancel: cancel}, root, Options{Workers: 1, Batch: BatchLimits{Docs: 1}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted re-read: %+v, %v", res, err)
	}
	done := readings(t, st, root)[ReadingVersion]
	if done == 0 || done == 20 {
		t.Fatalf("interrupted re-read recorded the new reading on %d of 20 files; want some, not all", done)
	}
	var told []int
	sweep(t, st, root, Options{Rereading: func(files []string) { told = append(told, len(files)) }})
	if len(told) != 1 || told[0] != 20-done || readings(t, st, root)[ReadingVersion] != 20 {
		t.Errorf("after an interrupted re-read of %d files: told %v, readings %v; want the other %d read again", done, told, readings(t, st, root), 20-done)
	}

	// A file that fails to read keeps the reading it had. (Played here by
	// a file broken under the same size and mtime.)
	p := filepath.Join(root, "n", "a.md")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Repeat("\xff", int(fi.Size()))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, time.Now(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	setReading(t, path, 0)
	for _, want := range []int{20, 1} {
		told = nil
		res, _ := Sweep(context.Background(), st, st, root, Options{Rereading: func(files []string) { told = append(told, len(files)) }})
		if res.FilesFailed != 1 || len(told) != 1 || told[0] != want || readings(t, st, root)[0] != 1 {
			t.Errorf("a file that fails on its re-read: told %v, %+v, readings %v; want %d files read again, the broken one failed and at its old reading",
				told, res, readings(t, st, root), want)
		}
	}
}

// A file read again though unchanged, for a newer reading or in another
// zone, counts the chunks that read as stored in chunks_reread, not in
// chunks_written, which counts only what changed: after an upgrade that
// reads every file alike, a sweep wrote nothing and said it wrote every
// chunk. A full sweep, which asks for every file to be written again,
// still counts them written.
func TestRereadChunksAreNotCountedWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recall.db")
	st := openAt(t, path)
	root := t.TempDir()
	// c1 was created at 07:08:09 UTC, on the 5th at UTC-10 and the 6th at
	// UTC-5; c2 at 12:00 UTC, on the 6th in both.
	write(t, root, "conversations.json", `[`+
		`{"uuid":"c1","name":"Tea","created_at":"2024-05-06T07:08:09Z","chat_messages":[`+
		`{"sender":"human","text":"how hot for green tea?"},{"sender":"assistant","text":"about 80 degrees"}]},`+
		`{"uuid":"c2","name":"Bread","created_at":"2024-05-06T12:00:00Z","chat_messages":[`+
		`{"sender":"human","text":"why did my bread not rise?"},{"sender":"assistant","text":"old yeast, most likely"}]}]`)
	write(t, root, "2025/07/a.md", convA)
	west := time.FixedZone("UTC-10", -10*3600)
	first, _ := sweep(t, st, root, Options{Zone: west})
	if first.ChunksWritten != 3 || first.ChunksReread != 0 {
		t.Fatalf("first sweep: %+v; want 3 chunks written", first)
	}

	setReading(t, path, ReadingVersion-1)
	if res, _ := sweep(t, st, root, Options{Zone: west}); res.FilesChanged != 2 || res.ChunksWritten != 0 || res.ChunksReread != 3 {
		t.Errorf("every file read again for a newer reading, read alike: %+v; want 3 chunks read again, none written", res)
	}
	if res, _ := sweep(t, st, root, Options{Zone: time.FixedZone("UTC-5", -5*3600)}); res.FilesRedated != 1 || res.ChunksWritten != 1 || res.ChunksReread != 1 {
		t.Errorf("the export read again in another zone, one conversation's day changed: %+v; want 1 chunk written, 1 read again", res)
	}
	if res, _ := sweep(t, st, root, Options{Full: true, Zone: time.FixedZone("UTC-5", -5*3600)}); res.ChunksWritten != 3 || res.ChunksReread != 0 {
		t.Errorf("a full sweep: %+v; want every chunk counted written", res)
	}
}
