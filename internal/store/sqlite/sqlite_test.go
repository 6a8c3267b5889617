package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
	"github.com/recall-mcp/recall/internal/store/storetest"
)

var ctx = context.Background()

func openTest(t *testing.T, opts Options) *DB {
	t.Helper()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "recall.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store { return openTest(t, Options{}) })
}

// TestContractSmallBudget runs the contract with a full-text budget so small
// that multi-word queries take the planned paths for common words.
func TestContractSmallBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the contract already ran with the default budget")
	}
	storetest.Run(t, func(t *testing.T) recall.Store { return openTest(t, Options{LexicalBudget: 20}) })
}

func TestMigrationsRecorded(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.ro.Query(`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var v int
		var name, at string
		if err := rows.Scan(&v, &name, &at); err != nil {
			t.Fatal(err)
		}
		if v != ms[n].Version || name != ms[n].Name || at == "" {
			t.Errorf("migration row %d = %d %q %q; want %d %q", n, v, name, at, ms[n].Version, ms[n].Name)
		}
		n++
	}
	if n != len(ms) || n == 0 {
		t.Errorf("%d migrations recorded; want %d", n, len(ms))
	}
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dirs", "recall.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive},
		Chunks: []recall.Chunk{{Text: "persisted words", Hash: recall.TextHash("persisted words")}}}
	if _, err := db.Write(ctx, []recall.Document{d}, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{{}, {ReadOnly: true}} {
		db, err = Open(ctx, path, opts)
		if err != nil {
			t.Fatalf("reopen %+v: %v", opts, err)
		}
		cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: "persisted"})
		if err != nil || len(cands) != 1 {
			t.Errorf("reopened %+v: %v, %v; want the chunk", opts, cands, err)
		}
		if opts.ReadOnly {
			_, err := db.Write(ctx, []recall.Document{d}, nil)
			if !errors.Is(err, ErrReadOnly) {
				t.Errorf("write to a read-only store: %v; want ErrReadOnly", err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "absent.db"), Options{ReadOnly: true}); err == nil {
		t.Error("read-only open of a missing file succeeded")
	}
}

func TestPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%d&_pragma=x")
	db, err := Open(ctx, filepath.Join(dir, "re?call.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(filepath.Join(dir, "re?call.db")); err != nil {
		t.Errorf("database not at the path given: %v", err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recall.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{len(ms) + 1, 999} {
		if _, err := db.rw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'x')`, v); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	// The message names the newest version the file records, and the way
	// back: a user who went back to this recall has the newer one, or a
	// backup made before it upgraded the file.
	for _, opts := range []Options{{}, {ReadOnly: true}, {Check: CheckOnRead, KeepSchema: true}} {
		_, err := Open(ctx, path, opts)
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema version 999;") || !strings.Contains(err.Error(), "or a backup made before") {
			t.Errorf("open %+v of a newer database: %v; want ErrNewerSchema naming version 999 and a backup", opts, err)
		}
	}
}

// A path that names no database (a directory, an export passed as --db)
// is refused as such, not as a disk error or as damage, and left as it is;
// a missing or empty file is a new database.
func TestNotADatabaseRefused(t *testing.T) {
	modes := []Options{{}, {ReadOnly: true}, {Check: CheckOnRead}, {Check: CheckInBackground}}
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		for _, opts := range modes {
			_, err := Open(ctx, dir, opts)
			if recall.ErrorCode(err) != recall.EINVALID || !strings.Contains(err.Error(), dir+" is a directory") ||
				!strings.Contains(err.Error(), filepath.Join(dir, "recall.db")) {
				t.Errorf("Open %+v of a directory: %v; want that it is a directory, and a file in it to pass instead", opts, err)
			}
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("Open of a directory wrote into it: %v", left)
		}
	})
	for name, content := range map[string]string{
		"export":     `{"source":"a.md","kind":"archive","chunks":[{"index":0,"text":"x"}]}` + "\n",
		"short file": "{}\n",
		"garbage":    strings.Repeat("this is not sqlite ", 500),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "backup.jsonl")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, opts := range modes {
				_, err := Open(ctx, path, opts)
				if recall.ErrorCode(err) != recall.EINVALID || errors.Is(err, ErrCorrupt) ||
					!strings.Contains(err.Error(), path+" is not a SQLite database (not a recall database)") {
					t.Errorf("Open %+v of a file that is no database: %v; want it said so, not damage", opts, err)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Errorf("the file was changed: %q", b)
			}
			if left, _ := os.ReadDir(dir); len(left) != 1 {
				t.Errorf("Open left files beside it: %v", left)
			}
		})
	}
	t.Run("another application's database", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "places.sqlite")
		c, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(`CREATE TABLE bookmarks (id INTEGER PRIMARY KEY, url TEXT); INSERT INTO bookmarks (url) VALUES ('https://example.com')`); err != nil {
			t.Fatal(err)
		}
		c.Close()
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range modes {
			db, err := Open(ctx, path, opts)
			if err == nil {
				db.Close()
			}
			if recall.ErrorCode(err) != recall.EINVALID || errors.Is(err, ErrCorrupt) ||
				!strings.Contains(err.Error(), "belongs to another application (its tables: bookmarks;") {
				t.Errorf("Open %+v of another application's database: %v; want it refused as such", opts, err)
			}
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
			t.Error("Open changed another application's database")
		}
	})
	t.Run("empty or missing", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "empty.db")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{empty, filepath.Join(t.TempDir(), "new", "recall.db")} {
			db, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatalf("Open of %s: %v", path, err)
			}
			d := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive},
				Chunks: []recall.Chunk{{Text: "words", Hash: recall.TextHash("words")}}}
			if _, err := db.Write(ctx, []recall.Document{d}, nil); err != nil {
				t.Errorf("a write to the new database %s: %v", path, err)
			}
			db.Close()
		}
	})
}

func TestCorruptFileRefused(t *testing.T) {
	t.Run("damaged pages", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "recall.db")
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		writeFiller(t, db, 200)
		db.Close()
		if _, err := os.Stat(path + "-wal"); err == nil {
			t.Fatal("the WAL was not checkpointed on close; damaging the main file would test nothing")
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := f.Stat()
		// Overwrite every page after the schema page with garbage, keeping
		// the header: b-tree pages no longer parse.
		junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 1024))
		for off := int64(4096); off < info.Size(); off += 4096 {
			if _, err := f.WriteAt(junk, off); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
		_, err = Open(ctx, path, Options{})
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open of a damaged file: %v; want ErrCorrupt", err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the damaged file is gone: %v", err)
		}
	})
}

// Damage tells the reader to restore a backup, and where to see the
// damage (`recall check`), except in what `recall check` itself shows:
// IntegrityCheck's error, and any other made so by DamageListed.
func TestDamageAdvice(t *testing.T) {
	const hint = "`recall check` lists the damage"
	path, _ := damagedTexts(t, false)
	_, openErr := Open(ctx, path, Options{})
	db, err := Open(ctx, path, Options{Check: CheckOnRead})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, readErr := db.Chunks(ctx, "f/1234.md", 0, 1)
	for what, err := range map[string]error{"Open": openErr, "a read": readErr} {
		if msg := recall.ErrorMessage(err); recall.ErrorCode(err) != recall.EDAMAGED || !strings.Contains(msg, "restore a backup") || !strings.Contains(msg, hint) {
			t.Errorf("%s of a damaged file: %q; want the advice and where to see the damage", what, msg)
		}
		listed := DamageListed(err)
		if msg := recall.ErrorMessage(listed); recall.ErrorCode(listed) != recall.EDAMAGED || !errors.Is(listed, ErrCorrupt) ||
			!strings.Contains(msg, "restore a backup") || strings.Contains(msg, "recall check") || !strings.Contains(listed.Error(), path) {
			t.Errorf("DamageListed of %s's error: %v; want the advice alone, with the detail", what, listed)
		}
	}
	err = db.IntegrityCheck(ctx)
	if msg := recall.ErrorMessage(err); !errors.Is(err, ErrCorrupt) || !strings.Contains(msg, "restore a backup") || strings.Contains(msg, "recall check") {
		t.Errorf("IntegrityCheck: %v; want the advice without sending the reader to recall check", err)
	}
	for _, other := range []error{nil, ErrReadOnly, errors.New("disk I/O error")} {
		if got := DamageListed(other); got != other {
			t.Errorf("DamageListed(%v) = %v; want it as it is", other, got)
		}
	}
}

// A store opened for a one-off read (CheckOnRead) does not walk the whole
// file at open: damage in pages it does not read lets it open, where the
// whole check refuses the file. Damage in a page a query reads is reported
// as ErrCorrupt, and the file is never written. When a log beside the file
// holds commits, the whole file is checked as for any other open.
func TestCheckOnRead(t *testing.T) {
	t.Run("no log", func(t *testing.T) {
		path, damaged := damagedTexts(t, false)
		if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Open with the whole check: %v; want ErrCorrupt", err)
		}
		db, err := Open(ctx, path, Options{Check: CheckOnRead})
		if err != nil {
			t.Fatalf("Open for reading, with the damage in pages it has not read: %v", err)
		}
		st, err := db.Stats(ctx)
		if err != nil || st.Chunks != 2000 {
			t.Errorf("Stats, which reads no text: %d chunks, %v", st.Chunks, err)
		}
		_, err = db.Chunks(ctx, "f/1234.md", 0, 1)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("reading a damaged text: %v; want ErrCorrupt", err)
		}
		// A write (a read command making the space of a new embedder)
		// walks the whole file first, and touches nothing damaged itself.
		if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "sp", Provider: "p", Model: "m", Dim: 2}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("a write from a store opened for reading, on a damaged file: %v; want ErrCorrupt", err)
		}
		db.Close()
		if now, _ := os.ReadFile(path); !bytes.Equal(now, damaged) {
			t.Errorf("the damaged file was written to")
		}
		for _, sfx := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(path + sfx); err == nil {
				t.Errorf("%s left beside the database", sfx)
			}
		}
	})
	t.Run("a write to a sound file", func(t *testing.T) {
		path, _, _ := fillerCopy(t, false)
		db, err := Open(ctx, path, Options{Check: CheckOnRead})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "sp", Provider: "p", Model: "m", Dim: 2}); err != nil {
			t.Errorf("a write from a store opened for reading: %v", err)
		}
		if err := db.FileChecked(ctx); err != nil {
			t.Errorf("FileChecked after the write: %v", err)
		}
	})
	t.Run("a log holding commits", func(t *testing.T) {
		// As beside a running server, or after a crash: the read sees the
		// log's commits and leaves log and file as they are, also when
		// it closes last, and also when it tries to write.
		path, damaged := damagedTexts(t, true)
		wal, _ := os.ReadFile(path + "-wal")
		db, err := Open(ctx, path, Options{Check: CheckOnRead})
		if err != nil {
			t.Fatalf("Open for reading beside a log: %v", err)
		}
		if _, err := db.Source(ctx, "f/0007.md"); recall.ErrorCode(err) != recall.ENOTFOUND {
			t.Errorf("a source the log deletes: %v; want not found", err)
		}
		if st, err := db.Stats(ctx); err != nil || st.Chunks != 1999 {
			t.Errorf("Stats: %d chunks, %v; want the log's 1999", st.Chunks, err)
		}
		if _, err := db.Chunks(ctx, "f/1234.md", 0, 1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("reading a damaged text: %v; want ErrCorrupt", err)
		}
		if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "sp", Provider: "p", Model: "m", Dim: 2}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("a write: %v; want ErrCorrupt", err)
		}
		if err := db.IntegrityCheck(ctx); !errors.Is(err, ErrCorrupt) {
			t.Errorf("IntegrityCheck: %v; want ErrCorrupt", err)
		}
		db.Close()
		if after, err := os.ReadFile(path + "-wal"); err != nil || !bytes.Equal(after, wal) {
			t.Errorf("the log was changed or deleted: %v", err)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, damaged) {
			t.Errorf("the damaged file was written to")
		}
	})
	t.Run("a log holding commits, sound file", func(t *testing.T) {
		path, _, _ := fillerCopy(t, true)
		db, err := Open(ctx, path, Options{Check: CheckOnRead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "sp", Provider: "p", Model: "m", Dim: 2}); err != nil {
			t.Errorf("a write after the walk: %v", err)
		}
		db.Close()
		db, err = Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if sps, err := db.Spaces(ctx); err != nil || len(sps) != 1 {
			t.Errorf("the space written: %v, %v", sps, err)
		}
		if _, err := db.Source(ctx, "f/0007.md"); recall.ErrorCode(err) != recall.ENOTFOUND {
			t.Errorf("the log's delete was lost: %v", err)
		}
	})
}

// A store opened for a server (CheckInBackground) opens without walking
// the file and walks it in the background: on a damaged file writes fail
// with ErrCorrupt and write nothing, reads of what is intact go on; on a
// sound one, writes wait for the walk and then succeed.
func TestCheckInBackground(t *testing.T) {
	path, damaged := damagedTexts(t, false)
	db, err := Open(ctx, path, Options{Check: CheckInBackground})
	if err != nil {
		t.Fatalf("Open for a server, with the damage in pages it has not read: %v", err)
	}
	if err := db.FileChecked(ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("FileChecked of a damaged file: %v; want ErrCorrupt", err)
	}
	if st, err := db.Stats(ctx); err != nil || st.Chunks != 2000 {
		t.Errorf("Stats after the check failed: %d chunks, %v", st.Chunks, err)
	}
	writeOne := func(db *DB) error {
		text := "a memory saved while the check runs"
		_, err := db.Write(ctx, []recall.Document{{
			Source: recall.Source{ID: "new.md", Kind: recall.KindArchive, Title: "New"},
			Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}},
		}}, nil)
		return err
	}
	if err := writeOne(db); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a write to a damaged file: %v; want ErrCorrupt", err)
	}
	db.Close()
	if now, _ := os.ReadFile(path); !bytes.Equal(now, damaged) {
		t.Errorf("the damaged file was written to")
	}

	path, _, _ = fillerCopy(t, false)
	db, err = Open(ctx, path, Options{Check: CheckInBackground})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeOne(db); err != nil {
		t.Errorf("a write to a sound file: %v", err)
	}
	if err := db.FileChecked(ctx); err != nil {
		t.Errorf("FileChecked of a sound file: %v", err)
	}
	db.Close()

	// Beside a log that holds commits (a server restarted after a crash),
	// the server opens at once too, and nothing folds the log into the
	// file before the walk has passed.
	logged, loggedDamaged := damagedTexts(t, true)
	wal, _ := os.ReadFile(logged + "-wal")
	db, err = Open(ctx, logged, Options{Check: CheckInBackground})
	if err != nil {
		t.Fatalf("Open for a server beside a log: %v", err)
	}
	if err := db.FileChecked(ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("FileChecked beside a log: %v; want ErrCorrupt", err)
	}
	if err := writeOne(db); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a write beside a log, to a damaged file: %v; want ErrCorrupt", err)
	}
	if st, err := db.Stats(ctx); err != nil || st.Chunks != 1999 { // the readers connect, and see the log
		t.Errorf("Stats beside a log: %d chunks, %v; want the log's 1999", st.Chunks, err)
	}
	db.Close()
	if after, err := os.ReadFile(logged + "-wal"); err != nil || !bytes.Equal(after, wal) {
		t.Errorf("the log was changed or deleted: %v", err)
	}
	if now, _ := os.ReadFile(logged); !bytes.Equal(now, loggedDamaged) {
		t.Errorf("the damaged file was written to")
	}
	sound, _, _ := fillerCopy(t, true)
	db, err = Open(ctx, sound, Options{Check: CheckInBackground})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Source(ctx, "f/0007.md"); recall.ErrorCode(err) != recall.ENOTFOUND {
		t.Errorf("a source the log deletes: %v; want not found", err)
	}
	if err := writeOne(db); err != nil {
		t.Errorf("a write beside a log, to a sound file: %v", err)
	}
	db.Close()
	if _, err := os.Stat(sound + "-wal"); err == nil {
		t.Errorf("the writer, closing last, left the log: it is folded once the file is known sound")
	}
	// One that only reads folds it too, once its walk has passed.
	sound, _, _ = fillerCopy(t, true)
	db, err = Open(ctx, sound, Options{Check: CheckInBackground})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.FileChecked(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Stat(sound + "-wal"); err == nil {
		t.Errorf("a server that only read left the log after its walk passed")
	}
	check, err := Open(ctx, sound, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := check.Source(ctx, "f/0007.md"); recall.ErrorCode(err) != recall.ENOTFOUND {
		t.Errorf("the log's delete was lost in the fold: %v", err)
	}
	check.Close()

	// A walk that could not finish (an I/O error) lets none of the writes
	// waiting for it through: the file is not known to be sound. The next
	// write walks again.
	db, err = Open(ctx, path, Options{Check: CheckInBackground})
	if err != nil {
		t.Fatal(err)
	}
	<-db.startWalk().done
	failing := &walk{done: make(chan struct{})}
	db.walkMu.Lock()
	db.walk = failing
	db.walkMu.Unlock()
	failing.err = errors.New("disk I/O error")
	close(failing.done)
	if err := db.waitWalk(ctx, failing); recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(err.Error(), "retry") {
		t.Errorf("a write waiting for a walk that did not finish: %v; want it refused, to retry", err)
	}
	if err := writeOne(db); err != nil {
		t.Errorf("the write after a walk that did not finish: %v; want a new walk, and the write", err)
	}
	if db.walk == failing {
		t.Errorf("no new walk after one that did not finish")
	}
	db.Close()
	if w := db.startWalk(); w != nil {
		t.Errorf("a walk started after Close")
	}

	// Closed right after Open, the walk perhaps still running: Close
	// returns (stopping the walk if it runs).
	db, err = Open(ctx, path, Options{Check: CheckInBackground})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close during the check: %v", err)
	}
}

// damagedTexts makes a database of 2000 filler sources and overwrites the
// leaf pages of its chunk texts but the last, which neither the schema nor
// Stats nor a new row reads.
// With withLog, the write-ahead log beside it holds a later commit, as a
// process that stopped without closing leaves it. It returns the path and
// the damaged file's bytes.
func damagedTexts(t *testing.T, withLog bool) (string, []byte) {
	t.Helper()
	path, pageSize, pages := fillerCopy(t, withLog)
	if len(pages) < 10 {
		t.Fatalf("chunk_texts has %d leaf pages; want enough to damage", len(pages))
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xde\xad\xbe\xef", int(pageSize)/4))
	for _, p := range pages {
		if _, err := f.WriteAt(junk, (p-1)*pageSize); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	damaged, _ := os.ReadFile(path)
	return path, damaged
}

// fillerCopy makes a database of 2000 filler sources and copies it to
// another path, with (withLog) a write-ahead log holding a later commit, as
// a process that stopped without closing leaves it. It returns the copy's
// path, the page size and the leaf pages of the chunk texts but the last.
func fillerCopy(t *testing.T, withLog bool) (string, int64, []int64) {
	t.Helper()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	db, err := Open(ctx, live, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFiller(t, db, 2000)
	var pageSize int64
	if err := db.ro.QueryRow(`SELECT page_size FROM pragma_page_size()`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	var pages []int64
	// In key order, and not the last: a new row goes to the last leaf, so
	// a write can succeed on the damaged file.
	rows, err := db.ro.Query(`SELECT pageno FROM dbstat WHERE name = 'chunk_texts' AND pagetype = 'leaf' ORDER BY path`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	rows.Close()
	pages = pages[:len(pages)-1]
	db.Close()
	path := filepath.Join(dir, "recall.db")
	if !withLog {
		copyFiles(t, live, path, "")
		return path, pageSize, pages
	}
	if db, err = Open(ctx, live, Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, err := db.Delete(ctx, "f/0007.md"); err != nil {
		t.Fatal(err)
	}
	// Copy the files while the store is open: the log holds commits.
	copyFiles(t, live, path, "", "-wal")
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatal("no log to keep: this test proves nothing")
	}
	return path, pageSize, pages
}

func writeFiller(t *testing.T, db *DB, n int) {
	t.Helper()
	var docs []recall.Document
	for i := range n {
		text := fmt.Sprintf("filler passage %d about nothing much, with some words to index: %s", i, strings.Repeat("lorem ipsum ", i%20))
		docs = append(docs, recall.Document{
			Source: recall.Source{ID: fmt.Sprintf("f/%04d.md", i), Kind: recall.KindArchive, Title: fmt.Sprint("Filler ", i)},
			Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}},
		})
	}
	if _, err := db.Write(ctx, docs, nil); err != nil {
		t.Fatal(err)
	}
}

// A corrupt database whose write-ahead log still holds commits (as after a
// crash) is refused as it is: the log is neither folded into the damaged
// file nor deleted (SECURITY.md 28). A writer that opened it and closed
// on finding it corrupt was the last connection, which checkpoints; so
// would a read-only store's readers, which can delete the log.
func TestCorruptFileKeepsItsLog(t *testing.T) {
	path, _, _ := fillerCopy(t, true)
	wal, _ := os.ReadFile(path + "-wal")
	if len(wal) == 0 {
		t.Fatal("no log to keep: this test proves nothing")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := f.Stat()
	junk := []byte(strings.Repeat("\xde\xad\xbe\xef", 1024))
	for off := int64(16384); off < info.Size(); off += 4096 {
		f.WriteAt(junk, off)
	}
	f.Close()
	damaged, _ := os.ReadFile(path)
	for _, opts := range []Options{{}, {ReadOnly: true}} {
		if _, err := Open(ctx, path, opts); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open %+v of a damaged file with a log: %v, want ErrCorrupt", opts, err)
		}
	}
	if after, err := os.ReadFile(path + "-wal"); err != nil || !bytes.Equal(after, wal) {
		t.Errorf("the log of a refused database was changed or deleted: %v (%d -> %d bytes)", err, len(wal), len(after))
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, damaged) {
		t.Errorf("the refused database file was written to")
	}
}

func TestIntegrityAfterWorkload(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "sp", Provider: "p", Model: "m", Dim: 2}); err != nil {
		t.Fatal(err)
	}
	writeFiller(t, db, 300)
	// Replace, shrink, delete and re-embed a share of it.
	for round := range 3 {
		var docs []recall.Document
		var vecs []recall.Vector
		for i := round; i < 300; i += 7 {
			var chunks []recall.Chunk
			for j := range i % 4 {
				text := fmt.Sprintf("round %d source %d chunk %d", round, i, j)
				chunks = append(chunks, recall.Chunk{Index: j, Text: text, Hash: recall.TextHash(text)})
				vecs = append(vecs, recall.Vector{Space: "sp", Key: recall.TextHash(text), Vec: []float32{float32(i), float32(j)}})
			}
			docs = append(docs, recall.Document{Source: recall.Source{ID: fmt.Sprintf("f/%04d.md", i), Kind: recall.KindArchive}, Chunks: chunks})
		}
		if _, err := db.Write(ctx, docs, vecs); err != nil {
			t.Fatal(err)
		}
		var del []string
		for i := round * 11; i < 300; i += 31 {
			del = append(del, fmt.Sprintf("f/%04d.md", i))
		}
		if _, _, err := db.Delete(ctx, del...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatalf("IntegrityCheck: %v", err)
	}
	// The check must be able to fail: break an invariant behind the
	// store's back.
	if _, err := db.rw.Exec(`INSERT INTO vectors (space, vkey, vec) VALUES ('sp', 'orphan', x'0000803f0000803f')`); err != nil {
		t.Fatal(err)
	}
	if err := db.IntegrityCheck(ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("IntegrityCheck with an orphan vector: %v; want ErrCorrupt", err)
	}
}

// TestSearchWhileWriting runs searches on the read pool while a writer
// replaces documents: WAL readers never wait for the writer nor fail busy.
func TestSearchWhileWriting(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	writeFiller(t, db, 50)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 3 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: "filler passage words", Limit: 10})
				if err == nil && len(cands) == 0 {
					err = errors.New("a search during writes found nothing")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 20 {
		writeFiller(t, db, 50)
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// FuzzLexical feeds arbitrary query text to a small store: a query may find
// nothing, but never fails and never returns a chunk twice.
func FuzzLexical(f *testing.F) {
	for _, s := range []string{`"`, `NEAR(a b)`, `') OR 1=1 --`, `"mint tea" tea*`, "茶", "iPhone很好用", "\xff", `{title}: x`, `a:b`, "the of"} {
		f.Add(s)
	}
	db, err := Open(ctx, filepath.Join(f.TempDir(), "fuzz.db"), Options{LexicalBudget: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	var docs []recall.Document
	for i, text := range []string{"mint tea and honey", "the near body of title", "我喜欢喝薄荷茶", "私はミントティーが好き", "a b c d e f", "tea tea tea"} {
		docs = append(docs, recall.Document{Source: recall.Source{ID: fmt.Sprint("d", i), Kind: recall.KindArchive, Title: "t"},
			Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}}})
	}
	if _, err := db.Write(ctx, docs, nil); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: q, Limit: 10})
		if err != nil {
			t.Fatalf("Lexical(%q): %v", q, err)
		}
		seen := map[int64]bool{}
		for _, c := range cands {
			if seen[c.ChunkID] {
				t.Fatalf("Lexical(%q) returned chunk %d twice", q, c.ChunkID)
			}
			seen[c.ChunkID] = true
		}
	})
}

// The database holds memories: its file and the WAL beside it are readable
// by their owner only, whatever the umask.
func TestDatabaseFilesArePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permission bits")
	}
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	doc := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, ChunkCount: 1},
		Chunks: []recall.Chunk{{Index: 0, Text: "private", Hash: recall.TextHash("private")}}}
	if _, err := db.Write(context.Background(), []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", filepath.Base(p), st.Mode().Perm())
		}
	}
}

// Every write is synced to disk before it is acknowledged: the write
// connection runs synchronous=FULL (NORMAL would leave the last commits in
// the operating system's cache, lost with the power), also after
// database/sql reopens it.
func TestWritesAreSynced(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	check := func() {
		t.Helper()
		var mode int
		if err := db.rw.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != 2 {
			t.Errorf("write connection synchronous = %d, want 2 (FULL)", mode)
		}
	}
	check()
	// A new connection (database/sql opens one after a bad one) is set up
	// from the connection string alike.
	db.rw.SetMaxIdleConns(0)
	check()
	db.rw.SetMaxIdleConns(1)
	doc := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, ChunkCount: 1},
		Chunks: []recall.Chunk{{Index: 0, Text: "kept", Hash: recall.TextHash("kept")}}}
	if _, err := db.Write(ctx, []recall.Document{doc}, nil); err != nil {
		t.Fatal(err)
	}
	check()
}

// A full disk (here: the page limit SQLite reports the same way) fails a
// write with a clear error that stores nothing of it; reads go on, and
// writes work again once there is room.
func TestFullDisk(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	doc := func(i int) recall.Document {
		text := strings.Repeat(fmt.Sprintf("passage %d about the harbour ", i), 200)
		return recall.Document{Source: recall.Source{ID: fmt.Sprintf("f%d.md", i), Kind: recall.KindArchive, ChunkCount: 1},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}}}
	}
	if _, err := db.Write(ctx, []recall.Document{doc(0)}, nil); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := db.rw.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.rw.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	var full error
	n := 1
	for ; n < 200 && full == nil; n++ {
		_, full = db.Write(ctx, []recall.Document{doc(n)}, nil)
	}
	if recall.ErrorCode(full) != recall.EUNAVAILABLE || !strings.Contains(full.Error(), "is full") {
		t.Fatalf("write to a full database: %v (code %s)", full, recall.ErrorCode(full))
	}
	failed := fmt.Sprintf("f%d.md", n-1)
	if _, err := db.Source(ctx, failed); !recall.IsNotFound(err) {
		t.Fatalf("the failed write left %s behind: %v", failed, err)
	}
	if _, err := db.Source(ctx, "f0.md"); err != nil {
		t.Fatalf("reads stop on a full disk: %v", err)
	}
	if _, err := db.rw.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write(ctx, []recall.Document{doc(n - 1)}, nil); err != nil {
		t.Fatalf("write once there is room: %v", err)
	}
}

// Back-to-back writes (a sweep, /ingest) do not grow the write-ahead log
// without bound: SQLite restarts it only when a writer begins after a
// complete checkpoint, which a passive checkpoint between busy writes never
// gives it.
func TestWALStaysBounded(t *testing.T) {
	defer func(n int64) { walRestartBytes = n }(walRestartBytes)
	walRestartBytes = 2 << 20
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	total, most := 0, int64(0)
	for i := 0; total < 16<<20; i++ {
		var docs []recall.Document
		for j := range 50 {
			text := strings.Repeat(fmt.Sprintf("w%d_%d ", i, j), 400)
			total += len(text)
			docs = append(docs, recall.Document{Source: recall.Source{ID: fmt.Sprintf("c/%d/%d.md", i, j), Kind: recall.KindArchive, ChunkCount: 1},
				Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}}})
		}
		if _, err := db.Write(context.Background(), docs, nil); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path + "-wal"); err == nil {
			most = max(most, fi.Size())
		}
	}
	if most > 8<<20 {
		t.Errorf("the log grew to %d MB while %d MB were written back to back", most>>20, total>>20)
	}
}

func oneChunk(id, text string) recall.Document {
	return recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, Title: "T", ChunkCount: 1},
		Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}}}
}

// IntegrityCheck sees what FTS5's own check cannot in a contentless table
// (a chunk with no full-text row is unsearchable; a row with no chunk is a
// phantom hit) and vectors of the wrong size for their space.
func TestIntegrityCheckSeesDrift(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, sql, want string }{
		{"chunk without a full-text row", `DELETE FROM chunks_fts WHERE rowid = (SELECT min(id) FROM chunks)`, "invariants: 1 chunks without a full-text row"},
		{"full-text row without a chunk", `INSERT INTO chunks_fts (rowid, title, body) VALUES (999999, 'x', 'ghost')`, "invariants: 1 full-text rows without a chunk"},
		{"vector of the wrong size", `UPDATE vectors SET vec = x'0000803f0000803f0000803f'`, "invariants: 1 vectors of the wrong size"},
		// PRAGMA integrity_check runs FTS5's own check (SQLite 3.44 on).
		{"fts5 index damaged", `UPDATE chunks_fts_data SET block = zeroblob(length(block)) WHERE id = (SELECT max(id) FROM chunks_fts_data)`, "integrity_check: fts5: corruption"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, Options{})
			defer db.Close()
			if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "p", Model: "m", Dim: 4}); err != nil {
				t.Fatal(err)
			}
			a := oneChunk("a/1.md", "alpha beta gamma")
			vec := []recall.Vector{{Space: "s", Key: a.Chunks[0].Hash, Vec: []float32{1, 0, 0, 0}}}
			if _, err := db.Write(ctx, []recall.Document{a, oneChunk("a/2.md", "delta epsilon")}, vec); err != nil {
				t.Fatal(err)
			}
			if err := db.IntegrityCheck(ctx); err != nil {
				t.Fatalf("a sound database: %v", err)
			}
			if _, err := db.rw.ExecContext(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			// The path, which holds the test's name, is no evidence.
			if err := db.IntegrityCheck(ctx); err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), db.path, ""), tc.want) {
				t.Errorf("IntegrityCheck with a %s: %v; want %q", tc.name, err, tc.want)
			}
		})
	}
}

// recall check on a one-off read store beside a log whose commits break an
// invariant: the check says so, and neither the file nor the log is
// written (it reads only; a writer it connected, or a checkpoint its
// commit kicked, would fold the log into the file).
func TestIntegrityCheckBesideALog(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	db, err := Open(ctx, live, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFiller(t, db, 50)
	db.Close()
	if db, err = Open(ctx, live, Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE sources SET chunk_count = chunk_count + 1 WHERE sid = (SELECT min(sid) FROM sources)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "recall.db")
	copyFiles(t, live, path, "", "-wal")
	wal, _ := os.ReadFile(path + "-wal")
	file, _ := os.ReadFile(path)
	if len(wal) == 0 {
		t.Fatal("no log: this test proves nothing")
	}
	c, err := Open(ctx, path, Options{Check: CheckOnRead})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.IntegrityCheck(ctx); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "chunk_count") {
		t.Errorf("IntegrityCheck: %v, want ErrCorrupt naming chunk_count", err)
	}
	c.Close()
	if after, err := os.ReadFile(path + "-wal"); err != nil || !bytes.Equal(after, wal) {
		t.Errorf("the log was changed or deleted: %v", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, file) {
		t.Errorf("the file was written to")
	}
}

// Two handles on one database file, as two processes have: a sweep lock
// taken through one holds against the other.
func TestVaultLockShared(t *testing.T) {
	a, b := openTwo(t)
	storetest.VaultLockShared(t, a, b)
}

// A handle that opened the database through a symbolic link takes the
// same sweep lock as one that opened the file itself, as SQLite resolves
// the link to the same database; and the lock file has the database
// file's permissions, so another user who may write the database may take
// it (it was created for its first taker alone).
func TestVaultLockFileFollowsTheDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "recall.db")
	a, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	b, err := Open(ctx, link, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := os.Chmod(path, 0o660); err != nil {
		t.Fatal(err)
	}
	const vault = "/vaults/linked"
	unlock, err := a.LockVault(ctx, vault, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := b.LockVault(ctx, vault, nil); !errors.Is(err, store.ErrVaultBusy) {
		t.Errorf("the vault's lock through a link to the database: %v, want it busy", err)
	}
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	if len(locks) != 1 {
		t.Fatalf("lock files %v, want one", locks)
	}
	if fi, err := os.Stat(locks[0]); err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("lock file %s: %v, mode %v; want the database's 0660", locks[0], err, fi.Mode().Perm())
	}
}

// openTwo opens two handles on one new database file, as two processes
// would, closed when the test ends.
func openTwo(t *testing.T) (a, b *DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "recall.db")
	open := func() *DB {
		db, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return open(), open()
}

// A process killed in the first transaction of a new database, before it
// turned it to WAL, leaves a hot rollback journal: Open rolls it back
// (SQLite's own recovery) instead of failing "attempt to write a readonly
// database" on its read-only check, forever (a crash test caught it).
func TestOpenRollsBackAHotJournal(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	// A page cache of a few pages spills the transaction into the file,
	// after syncing the journal that can undo it.
	c, err := sql.Open("sqlite", "file:"+live+"?_pragma=journal_mode(DELETE)&_pragma=cache_size(2)")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	// A new recall database has its schema_migrations before its first
	// migration's transaction (an application's own tables alone would be
	// refused as not recall's).
	if _, err := c.Exec(createMigrationsTable + `; CREATE TABLE t (x); INSERT INTO t VALUES ('kept')`); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
		INSERT INTO t SELECT 'undone ' || i || printf('%.1000c', 'x') FROM n`); err != nil {
		t.Fatal(err)
	}
	// Copy the files while the transaction is open: the journal is hot.
	path := filepath.Join(dir, "recall.db")
	copyFiles(t, live, path, "", "-journal")
	tx.Rollback()

	// A read-only store cannot roll it back, and says what will.
	if _, err := Open(ctx, path, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "recall sweep") {
		t.Errorf("read-only Open of a database with a hot journal: %v, want it to say what rolls it back", err)
	}
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open of a database with a hot journal: %v", err)
	}
	var rows []string
	r, err := db.rw.Query(`SELECT x FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var x string
		r.Scan(&x)
		rows = append(rows, x)
	}
	r.Close()
	db.Close()
	if !slices.Equal(rows, []string{"kept"}) {
		t.Errorf("after the rollback the table holds %q, want the committed row alone", rows)
	}
}

// copyFiles copies the files from+suffix to to+suffix, for each suffix: a
// database and its journal or log as they are at that moment.
func copyFiles(t *testing.T, from, to string, suffixes ...string) {
	t.Helper()
	for _, sfx := range suffixes {
		b, err := os.ReadFile(from + sfx)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+sfx, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// A new database has SQLite's default 4 KiB pages, as the databases behind
// BENCHMARKS.md's figures do (see dsnMode).
func TestNewDatabasePageSize(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	writeFiller(t, db, 1)
	var n int
	if err := db.ro.QueryRow(`SELECT page_size FROM pragma_page_size()`).Scan(&n); err != nil || n != 4096 {
		t.Errorf("page size %d, %v; want 4096", n, err)
	}
}

// TestPingAfterClose: Ping, which a server's /readyz asks, fails once the
// store cannot read its file any more.
func TestPingAfterClose(t *testing.T) {
	db := openTest(t, Options{})
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	db.Close()
	if err := db.Ping(ctx); err == nil {
		t.Error("Ping of a closed store succeeded")
	}
}

// A write to a file SQLite could open only for reading (its permissions, a
// file system mounted read-only) is refused as forbidden, saying why, as
// PostgreSQL refuses a role that may only read: it was an internal error,
// a server's 500, and its background repair retried it forever. Root may
// write any file, so the writer here is a connection that cannot write
// (mode=ro), which SQLite refuses alike (SQLITE_READONLY).
func TestWriteToAReadOnlyFile(t *testing.T) {
	db, err := Open(ctx, filepath.Join(t.TempDir(), "ro.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note_a", "written while it could be")}, nil); err != nil {
		t.Fatal(err)
	}
	rw := db.rw
	defer func() { db.rw = rw }()
	if db.rw, err = sql.Open("sqlite", db.dsnMode("mode=ro")); err != nil {
		t.Fatal(err)
	}
	defer db.rw.Close()
	_, err = db.Write(ctx, []recall.Document{memoryDoc("", "note_b", "refused")}, nil)
	var re *recall.Error
	if !errors.As(err, &re) || re.Code != recall.EFORBIDDEN || !strings.Contains(re.Message, "the database file may not be written") {
		t.Errorf("write to a read-only file: %v; want forbidden, saying the file may not be written", err)
	}
	if s, err := db.Source(ctx, recall.MemoryID("", "note_a")); err != nil || s.Body != "written while it could be" {
		t.Errorf("what was written before: %+v %v", s, err)
	}
}

// Every connection that writes or checkpoints syncs as a power loss needs:
// synchronous=FULL, and on macOS F_FULLFSYNC (fullfsync), without which an
// acknowledged commit sits in the drive's cache (SQLite's default there is
// fsync alone). Readers write nothing.
func TestWritesSyncThroughTheDrivesCache(t *testing.T) {
	db, err := Open(ctx, filepath.Join(t.TempDir(), "sync.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, conn := range map[string]*sql.DB{"writer": db.rw, "checkpointer": db.ckpt.conn} {
		var synchronous, fullfsync int
		if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&synchronous); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRowContext(ctx, `PRAGMA fullfsync`).Scan(&fullfsync); err != nil {
			t.Fatal(err)
		}
		if synchronous != 2 || fullfsync != 1 {
			t.Errorf("%s: synchronous %d, fullfsync %d; want 2 (FULL) and 1", name, synchronous, fullfsync)
		}
	}
}
