package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/storetest"
	"github.com/recall-mcp/recall/internal/textindex"
)

// schemaAt makes a database at path with the migrations up to version, as
// a recall of that version made it, and returns a writer connection to it
// for the test to fill as that version's writer would.
func schemaAt(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	old := &DB{path: path}
	old.opts.defaults()
	conn, err := sql.Open("sqlite", old.dsn(true))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetMaxOpenConns(1)
	if err := migrateTo(ctx, conn, version, nil); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestMigrateFullTextToTerms upgrades a database written at schema 3, whose
// full-text index stemmed with FTS5's porter tokenizer, and finds its chunks
// by stem, by phrase and by a two-character Chinese word afterwards: the
// migration rebuilt the index as terms.
func TestMigrateFullTextToTerms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	conn := schemaAt(t, path, 3)
	texts := []string{"She keeps running along the river every morning.", "我喜欢薄荷茶, and the Generalizations of cafés."}
	for i, text := range texts {
		id := int64(i + 1)
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO sources (sid, id, kind, title, chunk_count, created_at, updated_at) VALUES (?, ?, 'archive', 'Walks', 1, 0, 0)`,
				[]any{id, "old/" + string(rune('a'+i)) + ".md"}},
			{`INSERT INTO chunks (id, sid, idx, hash, kind, owner, category) VALUES (?, ?, 0, ?, 'archive', '', '')`,
				[]any{id, id, recall.TextHash(text)}},
			{`INSERT INTO chunk_texts (id, text) VALUES (?, ?)`, []any{id, text}},
			// What schema 3's writer gave its porter tokenizer.
			{`INSERT INTO chunks_fts (rowid, title, body) VALUES (?, ?, ?)`,
				[]any{id, textindex.Normalize("Walks"), textindex.Normalize(text)}},
		} {
			if _, err := conn.Exec(q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	conn.Close()

	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range []struct {
		query string
		want  []int64
	}{
		{"runs", []int64{1}},
		{`"keeps running"`, []int64{1}},
		{"薄荷", []int64{2}},
		{"generalization cafe", []int64{2}},
		{"walk", []int64{1, 2}}, // the title
	} {
		cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: tt.query, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, c := range cands {
			got = append(got, c.ChunkID)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Lexical(%q) found chunks %v; want %v", tt.query, got, tt.want)
		}
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("integrity check after migration: %v", err)
	}
}

// TestMigrateSettlesSkipped upgrades a database in which memories saved
// without an embedder stayed "skipped" beside a vector space, one of them
// after repair embedded it: the migration makes that one ok and the other
// pending, for repair.
func TestMigrateSettlesSkipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "test", Model: "m", Dim: 2}); err != nil {
		t.Fatal(err)
	}
	var docs []recall.Document
	for _, key := range []string{"embedded", "not embedded"} {
		docs = append(docs, recall.Document{
			Source: recall.Source{ID: recall.MemoryID("", key), Kind: recall.KindMemory, ContentHash: recall.TextHash(key),
				Size: int64(len(key)), ChunkCount: 1, Body: key, IndexState: recall.IndexSkipped},
			Chunks: []recall.Chunk{{Text: key, Hash: recall.TextHash(key)}},
		})
	}
	vecs := []recall.Vector{{Space: "s", Key: recall.TextHash("embedded"), Vec: []float32{0.6, 0.8}}}
	if _, err := db.Write(ctx, docs, vecs); err != nil {
		t.Fatal(err)
	}
	// What an older recall left: both skipped, and schema 6 (with 8's
	// column, which 7 does not read).
	undoVectorKeys(t, db)
	for _, q := range []string{`UPDATE sources SET index_state = 'skipped'`, `DELETE FROM schema_migrations WHERE version = 7`} {
		if _, err := db.rw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for key, want := range map[string]string{"embedded": recall.IndexOK, "not embedded": recall.IndexPending} {
		if src, err := db.Source(ctx, recall.MemoryID("", key)); err != nil || src.IndexState != want {
			t.Errorf("%s after migrating: %q %v; want %q", key, src.IndexState, err, want)
		}
	}
}

// olderDB writes a memory into a new database at path and takes schema
// versions 6 to 9 off it, as a recall from before them left it (their
// steps rebuild from what is stored: the full-text index, index states;
// 8's column is dropped, 9's vector keys undone).
func olderDB(t *testing.T, path string) {
	t.Helper()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note_log", "the lighthouse keeper's log")}, nil); err != nil {
		t.Fatal(err)
	}
	undoVectorKeys(t, db)
	for _, q := range []string{`DELETE FROM schema_migrations WHERE version >= 6`, `ALTER TABLE sources DROP COLUMN reading`} {
		if _, err := db.rw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
}

// undoVectorKeys leaves db as schema version 8 left it: vectors keyed by
// the hash of their chunks' text (each vector's chunks must hold one
// text), no chunks.vkey, version 9 not recorded.
func undoVectorKeys(t *testing.T, db *DB) {
	t.Helper()
	for _, q := range []string{
		`UPDATE vectors SET vkey = (SELECT c.hash FROM chunks c WHERE c.vkey = vectors.vkey LIMIT 1)`,
		`ALTER TABLE vectors RENAME COLUMN vkey TO hash`,
		`DROP INDEX IF EXISTS chunks_vkey`,
		`ALTER TABLE chunks DROP COLUMN vkey`,
		`ALTER TABLE sources DROP COLUMN zone`, // 11's
		`DROP TABLE refusals`,                  // 12's
		`DELETE FROM schema_migrations WHERE version >= 9`,
	} {
		if _, err := db.rw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
}

// An upgrade from version 8 keys the stored vectors by header and text
// without embedding anything (storetest.VectorKeysUpgrade).
func TestVectorKeysUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.VectorKeysUpgrade(t, db, func(t *testing.T, s recall.Store) {
		undoVectorKeys(t, db)
		db.Close()
		if v := schemaVersionOf(t, path); v != 8 {
			t.Fatalf("the older database is at version %d; want 8", v)
		}
	}, func(t *testing.T) recall.Store { return openChecked(t, path) })
}

// openChecked opens the database at path, upgrading it, and checks it.
func openChecked(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("integrity check after the upgrade: %v", err)
	}
	return db
}

// An upgrade from version 9 gives every chunk with a header a key that
// begins with its text's hash, renames its vector, and drops chunks_vkey
// (storetest.VectorKeyPrefixUpgrade).
func TestVectorKeyPrefixUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.VectorKeyPrefixUpgrade(t, db, func(t *testing.T, s recall.Store) {
		if n := asVersion9(t, db); n != 5 {
			t.Fatalf("%d keys renamed to version 9's; want the 5 of chunks with a header", n)
		}
		db.Close()
		if v := schemaVersionOf(t, path); v != 9 {
			t.Fatalf("the older database is at version %d; want 9", v)
		}
	}, func(t *testing.T) recall.Store {
		db := openChecked(t, path)
		var n int
		if err := db.ro.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'chunks_vkey'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("chunks_vkey after the upgrade: %d, %v; want it gone", n, err)
		}
		return db
	})
}

// asVersion9 turns db's database into one as schema version 9 left it:
// the vector keys of chunks with a header, and their vectors, renamed to
// that version's (storetest.KeyV9), chunks_vkey made, version 10 not
// recorded. It returns how many keys it renamed.
func asVersion9(tb testing.TB, db *DB) int {
	tb.Helper()
	type row struct {
		id                 int64
		hash, vkey, header string
	}
	var chunks []row
	rows, err := db.rw.QueryContext(ctx, `SELECT c.id, c.hash, c.vkey, t.header FROM chunks c JOIN chunk_texts t ON t.id = c.id`)
	if err != nil {
		tb.Fatal(err)
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.hash, &r.vkey, &r.header); err != nil {
			tb.Fatal(err)
		}
		chunks = append(chunks, r)
	}
	rows.Close()
	tx, err := db.rw.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	renamed := map[string]bool{}
	for _, r := range chunks {
		old := storetest.KeyV9(r.header, r.hash)
		if old == r.vkey {
			continue
		}
		qs := []string{`UPDATE chunks SET vkey = ?1 WHERE id = ?3`}
		if !renamed[r.vkey] {
			renamed[r.vkey] = true
			qs = append(qs, `UPDATE vectors SET vkey = ?1 WHERE space IN (SELECT name FROM spaces) AND vkey = ?2`)
		}
		for _, q := range qs {
			if _, err := tx.ExecContext(ctx, q, old, r.vkey, r.id); err != nil {
				tb.Fatal(q, err)
			}
		}
	}
	for _, q := range []string{`CREATE INDEX chunks_vkey ON chunks (vkey)`, `ALTER TABLE sources DROP COLUMN zone`, `DROP TABLE refusals`, `DELETE FROM schema_migrations WHERE version >= 10`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tb.Fatal(q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return len(renamed)
}

// memoryDoc is a memory of owner's under key holding text.
func memoryDoc(owner, key, text string) recall.Document {
	return recall.Document{
		Source: recall.Source{ID: recall.MemoryID(owner, key), Kind: recall.KindMemory, Owner: owner, Title: key,
			ContentHash: recall.TextHash(text), ChunkCount: 1, Body: text, IndexState: recall.IndexSkipped},
		Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}},
	}
}

// schemaVersionOf reads the highest schema version the file at path records.
func schemaVersionOf(t *testing.T, path string) int {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var v int
	if err := conn.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// An older database opened with KeepSchema stays at its version: it is
// read-only, its check is SQLite's, and its backup is at its version too.
// Opened otherwise, it is upgraded, and Upgrading is told first, once.
func TestOlderSchemaKeptOrUpgraded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.db")
	olderDB(t, path)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	known := len(ms)

	for _, check := range []CheckMode{CheckAtOpen, CheckOnRead} {
		db, err := Open(ctx, path, Options{Check: check, KeepSchema: true, Upgrading: func(from, to int) {
			t.Errorf("KeepSchema: upgrading from %d to %d", from, to)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if schema, older := db.OlderSchema(); !older || schema != fmt.Sprintf("version 5 of %d", known) {
			t.Errorf("OlderSchema() = %q, %v; want version 5 of %d", schema, older, known)
		}
		if db.UpgradeInterrupted() {
			t.Error("UpgradeInterrupted of a file an older recall wrote: true")
		}
		if err := db.IntegrityCheck(ctx); err != nil {
			t.Errorf("IntegrityCheck of the older file: %v", err)
		}
		if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note_new", "a new note")}, nil); !errors.Is(err, ErrReadOnly) {
			t.Errorf("a write to the older file kept as it is: %v; want ErrReadOnly", err)
		}
		backup := filepath.Join(dir, fmt.Sprintf("backup-%d.db", check))
		if err := db.Backup(ctx, backup); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if v := schemaVersionOf(t, path); v != 5 {
			t.Errorf("KeepSchema left the file at version %d; want 5", v)
		}
		if v := schemaVersionOf(t, backup); v != 5 {
			t.Errorf("the backup is at version %d; want the file's, 5", v)
		}
	}

	var told [][2]int
	upgrading := func(from, to int) { told = append(told, [2]int{from, to}) }
	for range 2 {
		db, err := Open(ctx, path, Options{Upgrading: upgrading, Resuming: func(from, to int) {
			t.Errorf("an older recall's file: told resuming from %d to %d, not upgrading", from, to)
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, older := db.OlderSchema(); older {
			t.Error("OlderSchema after an upgrade: older")
		}
		db.Close()
	}
	if want := [][2]int{{5, known}}; !slices.Equal(told, want) {
		t.Errorf("Upgrading was told %v; want %v", told, want)
	}
	if v := schemaVersionOf(t, path); v != known {
		t.Errorf("upgraded file at version %d; want %d", v, known)
	}
	db, err := Open(ctx, path, Options{KeepSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, older := db.OlderSchema(); older {
		t.Error("KeepSchema on a current file: older")
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("IntegrityCheck after the upgrade: %v", err)
	}
	if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note_new", "a new note")}, nil); err != nil {
		t.Errorf("a write with KeepSchema to a current file: %v", err)
	}
}

// A first Open killed (kill -9) after the file got its header and before
// its first table leaves a SQLite file without tables: `recall check`, the
// command to run after a crash, and a dry run read it as version 0, as
// one killed after its first table, rather than failing with "no such
// table: schema_migrations"; a command that writes completes it.
func TestFirstOpenKilledBeforeItsFirstTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recall.db")
	killed := &DB{path: path}
	killed.opts.defaults()
	conn, err := sql.Open("sqlite", killed.dsn(true)) // journal_mode(WAL) writes the header
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(); err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := conn.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("the killed first Open left %d tables (%v)", tables, err)
	}
	conn.Close()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("the killed first Open left no header: %v", err)
	}

	db, err := Open(ctx, path, Options{KeepSchema: true})
	if err != nil {
		t.Fatalf("open as recall check does: %v", err)
	}
	if schema, older := db.OlderSchema(); !older || !strings.HasPrefix(schema, "version 0 of") {
		t.Errorf("OlderSchema = %q, %t; want version 0, older", schema, older)
	}
	if !db.UpgradeInterrupted() {
		t.Error("UpgradeInterrupted: false; want true (no recall leaves a file at version 0)")
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("IntegrityCheck: %v", err)
	}
	db.Close()
	if _, err := Open(ctx, path, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "version 0 of") {
		t.Errorf("read-only open: %v; want the schema named as version 0, to be upgraded by a command that writes", err)
	}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note", "after the crash")}, nil); err != nil {
		t.Errorf("a write after the crash: %v", err)
	}
}

// A first Open, or an upgrade, that stops between two migrations (each
// commits on its own: a kill -9 there leaves the file at the version
// before) leaves a file at an older version that no older recall wrote:
// KeepSchema (recall check, backup) says its upgrade was interrupted, a
// read-only open says what completes it, and the next Open that may write
// completes it. Here the last migration fails on a table in its way, which
// leaves what a kill before its commit leaves.
func TestUpgradeInterruptedPartWay(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	known := len(ms)
	path := filepath.Join(t.TempDir(), "recall.db")
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The last migration creates refusals.
	for _, q := range []string{createMigrationsTable, `CREATE TABLE refusals (x)`} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, path, Options{}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("migration %04d_", known)) {
		t.Fatalf("the first open with the last migration's table in its way: %v; want migration %d to fail", err, known)
	}
	if _, err := conn.Exec(`DROP TABLE refusals`); err != nil {
		t.Fatal(err)
	}

	db, err := Open(ctx, path, Options{KeepSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	if schema, older := db.OlderSchema(); !older || schema != fmt.Sprintf("version %d of %d", known-1, known) {
		t.Errorf("OlderSchema = %q, %t; want version %d of %d", schema, older, known-1, known)
	}
	if !db.UpgradeInterrupted() {
		t.Error("UpgradeInterrupted of a file whose first open stopped before its last migration: false")
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("IntegrityCheck: %v", err)
	}
	db.Close()
	if _, err := Open(ctx, path, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "last upgrade was interrupted") {
		t.Errorf("read-only open: %v; want it to say the last upgrade was interrupted", err)
	}
	var resumed [][2]int
	db, err = Open(ctx, path, Options{
		Upgrading: func(from, to int) {
			t.Errorf("an interrupted upgrade: told upgrading from %d to %d, as an older recall's file", from, to)
		},
		Resuming: func(from, to int) { resumed = append(resumed, [2]int{from, to}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{known - 1, known}}; !slices.Equal(resumed, want) {
		t.Errorf("told resuming %v; want %v", resumed, want)
	}
	if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note", "after the crash")}, nil); err != nil {
		t.Errorf("a write after the interrupted upgrade: %v", err)
	}
	db.Close()
	if v := schemaVersionOf(t, path); v != known {
		t.Errorf("completed file at version %d; want %d", v, known)
	}
	db, err = Open(ctx, path, Options{KeepSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, older := db.OlderSchema(); older || db.UpgradeInterrupted() {
		t.Errorf("after the upgrade completed: older %t, interrupted %t; want neither", older, db.UpgradeInterrupted())
	}
}

// A store left open while a newer recall upgrades the file under it (a
// server running across an upgrade) writes nothing more: its writes would
// follow its own schema's rules, not the newer one's.
func TestWriteAfterANewerUpgradeRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "recall.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Write(ctx, []recall.Document{memoryDoc("", "note_before", "before the upgrade")}, nil); err != nil {
		t.Fatal(err)
	}
	newer, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	if _, err := newer.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 'x')`, db.known+1); err != nil {
		t.Fatal(err)
	}
	_, err = db.Write(ctx, []recall.Document{memoryDoc("", "note_after", "after the upgrade")}, nil)
	if !errors.Is(err, ErrNewerSchema) {
		t.Errorf("a write after a newer recall upgraded the file: %v; want ErrNewerSchema", err)
	}
	// What a server logs, and tells the client whose write it refused, is
	// the reason and what to do: it was "internal error".
	if msg := recall.ErrorMessage(err); recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(msg, "restart this process with the newer recall") {
		t.Errorf("the refused write's code and message: %s %q; want unavailable, saying to restart with the newer recall", recall.ErrorCode(err), msg)
	}
	if _, err := db.Source(ctx, recall.MemoryID("", "note_after")); !recall.IsNotFound(err) {
		t.Errorf("the refused write's source: %v; want it not stored", err)
	}
	if _, err := db.Source(ctx, recall.MemoryID("", "note_before")); err != nil {
		t.Errorf("reads go on: %v", err)
	}
}

// The first builds of recall made chunks without their source attributes,
// and 0001 was edited in place after them, so such a database records the
// same versions as any other (and an upgrade to 7 left it so, unable to
// take a write). Open completes it, whatever version it records.
func TestEarlyChunksCompleted(t *testing.T) {
	for _, version := range []int{1, 7} {
		t.Run(fmt.Sprint(version), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "early.db")
			conn := schemaAt(t, path, version)
			text := "我喜欢薄荷茶 and walks by the river"
			for _, q := range []string{
				// 0001_init.sql as the builds before 78e50fc had it.
				`DROP INDEX chunks_personal`,
				`ALTER TABLE chunks DROP COLUMN kind`, `ALTER TABLE chunks DROP COLUMN owner`, `ALTER TABLE chunks DROP COLUMN category`,
				`ALTER TABLE chunks DROP COLUMN date_lo`, `ALTER TABLE chunks DROP COLUMN date_hi`,
				`INSERT INTO sources (sid, id, kind, title, owner, category, date, date_lo, date_hi, chunk_count, body, created_at, updated_at)
					VALUES (1, 'memory:ann:note_tea', 'memory', 'note_tea', 'ann', 'note', '2025-11-29', '2025-11-29', '2025-11-29', 1, '` + text + `', 0, 0)`,
				`INSERT INTO chunks (id, sid, idx, hash) VALUES (1, 1, 0, '` + recall.TextHash(text) + `')`,
				`INSERT INTO chunk_texts (id, text) VALUES (1, '` + text + `')`,
			} {
				if _, err := conn.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if version >= 4 {
				// The row a writer gives the full-text index; before 0004,
				// the migrations rebuild it.
				if _, err := conn.Exec(`INSERT INTO chunks_fts (rowid, title, body) VALUES (1, ?, ?)`,
					ftsTitle("note_tea", "2025-11-29"), textindex.IndexText(text)); err != nil {
					t.Fatal(err)
				}
			}
			conn.Close()

			db, err := Open(ctx, path, Options{Check: CheckOnRead})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var kind, owner, category, lo, hi string
			if err := db.ro.QueryRow(`SELECT kind, owner, category, date_lo, date_hi FROM chunks WHERE id = 1`).Scan(&kind, &owner, &category, &lo, &hi); err != nil {
				t.Fatal(err)
			}
			if kind != "memory" || owner != "ann" || category != "note" || lo != "2025-11-29" || hi != "2025-11-29" {
				t.Errorf("the chunk's attributes: %q %q %q %q %q; want its source's", kind, owner, category, lo, hi)
			}
			if _, err := db.Write(ctx, []recall.Document{memoryDoc("ann", "note_walk", "a walk")}, nil); err != nil {
				t.Errorf("a write to the completed database: %v", err)
			}
			cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: "薄荷", Limit: 5, Filter: recall.Filter{Kinds: []recall.Kind{recall.KindMemory}, OwnerScoped: true, Owner: "ann"}})
			if err != nil || len(cands) != 1 {
				t.Errorf("a filtered search of the completed database: %v, %v; want the chunk", cands, err)
			}
			if err := db.IntegrityCheck(ctx); err != nil {
				t.Errorf("IntegrityCheck of the completed database: %v", err)
			}
		})
	}
}

// TestCheckpointsInBackground: the write connection never checkpoints, yet
// the pages of committed writes reach the database file: the checkpointer
// copies every frame of the log soon after the writes stop.
func TestCheckpointsInBackground(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	for i := range 20 {
		doc := recall.Document{
			Source: recall.Source{ID: fmt.Sprintf("c/%d.md", i), Kind: recall.KindArchive},
			Chunks: []recall.Chunk{{Text: strings.Repeat(fmt.Sprintf("word%d ", i), 2000)}},
		}
		doc.Chunks[0].Hash = recall.TextHash(doc.Chunks[0].Text)
		doc.Source.ChunkCount = 1
		if _, err := db.Write(ctx, []recall.Document{doc}, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		logFrames, copied := db.ckpt.logFrames.Load(), db.ckpt.copied.Load()
		if logFrames > 0 && copied == logFrames {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last checkpoint: %d of %d log frames copied; want all", copied, logFrames)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var auto int
	if err := db.rw.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Errorf("write connection wal_autocheckpoint = %d, %v; want 0", auto, err)
	}
}

// Migration 11 records no zone for the sources before it
// (storetest.ZoneUpgrade).
func TestSourceZoneUpgrade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.ZoneUpgrade(t, db, func(t *testing.T, s recall.Store) {
		for _, q := range []string{`ALTER TABLE sources DROP COLUMN zone`, `DROP TABLE refusals`, `DELETE FROM schema_migrations WHERE version >= 11`} {
			if _, err := db.rw.ExecContext(ctx, q); err != nil {
				t.Fatal(q, err)
			}
		}
		db.Close()
	}, func(t *testing.T) recall.Store { return openChecked(t, path) })
}
