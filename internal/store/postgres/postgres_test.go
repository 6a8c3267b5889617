package postgres

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
	"github.com/recall-mcp/recall/internal/store/storetest"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if loadDir != "" {
		os.RemoveAll(loadDir) // BenchmarkIndexLoad's SQLite store
	}
	os.Exit(code)
}

func openTest(t *testing.T, dsn string, opts Options) *DB {
	t.Helper()
	db, err := Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// contractStore opens a store on a fresh database for the contract suite
// and, once the suite has closed it, checks the invariants its writes
// kept (counters, document frequencies, vector counts) on a new handle.
func contractStore(t *testing.T, opts Options) recall.Store {
	dsn := pgtest.Server(t)
	t.Cleanup(func() {
		db, err := Open(ctx, dsn, Options{})
		if err != nil {
			t.Errorf("reopen for the integrity check: %v", err)
			return
		}
		defer db.Close()
		if err := db.IntegrityCheck(ctx); err != nil {
			t.Errorf("after the test: %v", err)
		}
	})
	return openTest(t, dsn, opts)
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store { return contractStore(t, Options{}) })
}

// TestContractSmallBudget runs the contract with a full-text budget so small
// that multi-word queries take the planned paths for common words.
func TestContractSmallBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the contract already ran with the default budget")
	}
	storetest.Run(t, func(t *testing.T) recall.Store { return contractStore(t, Options{LexicalBudget: 20}) })
}

func textDoc(id string, texts ...string) recall.Document {
	d := recall.Document{Source: recall.Source{ID: id, Kind: recall.KindArchive, ContentHash: recall.TextHash(strings.Join(texts, "\x00"))}}
	for i, text := range texts {
		d.Chunks = append(d.Chunks, recall.Chunk{Index: i, Text: text, Hash: recall.TextHash(text)})
	}
	return d
}

// TestTwoProcesses: two stores on one database (two processes) see each
// other's writes, in reads, searches and the census that Follow polls.
func TestTwoProcesses(t *testing.T) {
	dsn := pgtest.Server(t)
	a, b := openTest(t, dsn, Options{}), openTest(t, dsn, Options{})
	defer a.Close()
	defer b.Close()
	before, err := b.Census(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Write(ctx, []recall.Document{textDoc("a.md", "written by the first process")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := b.Census(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if after == before || after.Chunks != 1 || after.MaxChunkID != res.Added[0].ID {
		t.Errorf("census of the other store: %+v before, %+v after; want one chunk, id %d", before, after, res.Added[0].ID)
	}
	if _, err := b.Source(ctx, "a.md"); err != nil {
		t.Errorf("the other store reads: %v", err)
	}
	if _, err := b.Write(ctx, []recall.Document{textDoc("b.md", "a zeppelin from the second process")}, nil); err != nil {
		t.Fatal(err)
	}
	cands, err := a.Lexical(ctx, recall.LexicalQuery{Text: "zeppelin"})
	if err != nil || len(cands) != 1 {
		t.Errorf("the first store finds the second's write: %+v, %v", cands, err)
	}
	if _, err := a.CreateSpace(ctx, recall.VectorSpace{Name: "s", Provider: "p", Model: "m", Dim: 2}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutVectors(ctx, []recall.Vector{{Space: "s", Key: recall.TextHash("written by the first process"), Vec: []float32{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Census(ctx, "s"); err != nil || c.ReadSpace != "s" || c.Vectors != 1 || c.Chunks != 2 {
		t.Errorf("census of the other store after vectors: %+v, %v", c, err)
	}
}

// TestConcurrentWritersCommitInOrder: chunk ids commit in ascending order
// however writes of several processes interleave, so a follower that saw a
// largest id never finds a smaller one appear later (which a census
// comparison would miss).
func TestConcurrentWritersCommitInOrder(t *testing.T) {
	dsn := pgtest.Server(t)
	stores := []*DB{openTest(t, dsn, Options{}), openTest(t, dsn, Options{}), openTest(t, dsn, Options{})}
	for _, s := range stores {
		defer s.Close()
	}
	stop := make(chan struct{})
	var watchErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		seen := map[int64]bool{}
		var maxSeen int64
		for {
			select {
			case <-stop:
				return
			default:
			}
			ids, err := stores[0].ChunkIDs(ctx)
			if err != nil {
				watchErr = err
				return
			}
			for _, id := range ids {
				if !seen[id] && id < maxSeen {
					watchErr = fmt.Errorf("chunk %d appeared after chunk %d had been seen", id, maxSeen)
					return
				}
				seen[id] = true
				maxSeen = max(maxSeen, id)
			}
		}
	}()
	var writers sync.WaitGroup
	for w, s := range stores {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 20 {
				id := fmt.Sprintf("w%d/%02d.md", w, i)
				if _, err := s.Write(ctx, []recall.Document{textDoc(id, "one "+id, "two "+id)}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	if watchErr != nil {
		t.Error(watchErr)
	}
	if err := stores[1].IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

// TestStricterDefaultIsolation: a database whose default isolation is
// REPEATABLE READ or SERIALIZABLE (ALTER DATABASE ... SET
// default_transaction_isolation, as some sites set it) is migrated and
// written as any other: a transaction that waited for the migration or
// writer lock must see what the holder committed, which a snapshot taken
// before the lock was granted did not (a migration ran twice, writes of
// one source by two processes failed on duplicate keys).
func TestStricterDefaultIsolation(t *testing.T) {
	for _, iso := range []string{"repeatable read", "serializable"} {
		t.Run(strings.ReplaceAll(iso, " ", "_"), func(t *testing.T) {
			dsn := pgtest.Server(t)
			u, _ := url.Parse(dsn)
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.Exec(ctx, `ALTER DATABASE `+strings.TrimPrefix(u.Path, "/")+` SET default_transaction_isolation = '`+iso+`'`)
			conn.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			stores := openConcurrently(t, dsn, 3)
			for _, s := range stores {
				defer s.Close()
			}
			checkMigrations(t, stores[0])
			var wg sync.WaitGroup
			for w, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 20 {
						doc := textDoc(fmt.Sprintf("k%d.md", i%3), fmt.Sprintf("text %d of writer %d", i, w))
						if _, err := s.Write(ctx, []recall.Document{doc}, nil); err != nil {
							t.Errorf("a write beside others: %v (code %s)", err, recall.ErrorCode(err))
							return
						}
					}
				}()
			}
			wg.Wait()
			if err := stores[0].IntegrityCheck(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestConcurrentOpenMigratesOnce: processes opening a fresh database at
// the same moment all succeed, and each migration is applied once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dbs := openConcurrently(t, pgtest.Server(t), 6)
	for _, d := range dbs {
		defer d.Close()
	}
	checkMigrations(t, dbs[0])
}

// openConcurrently opens n stores on dsn at the same moment, failing the
// test unless all of them open.
func openConcurrently(t *testing.T, dsn string, n int) []*DB {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	dbs := make(chan *DB, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(ctx, dsn, Options{})
			if err != nil {
				errs <- err
				return
			}
			dbs <- db
		}()
	}
	wg.Wait()
	close(errs)
	close(dbs)
	var out []*DB
	for d := range dbs {
		out = append(out, d)
	}
	for err := range errs {
		for _, d := range out {
			d.Close()
		}
		t.Fatalf("Open: %v", err)
	}
	return out
}

func checkMigrations(t *testing.T, db *DB) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.pool.Query(ctx, `SELECT version, name, applied_at FROM recall_schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var v int
		var name string
		var at time.Time
		if err := rows.Scan(&v, &name, &at); err != nil {
			t.Fatal(err)
		}
		if n >= len(ms) || v != ms[n].Version || name != ms[n].Name || at.IsZero() {
			t.Errorf("migration row %d = %d %q %v", n, v, name, at)
		}
		n++
	}
	if n != len(ms) || n == 0 {
		t.Errorf("%d migrations recorded; want %d", n, len(ms))
	}
}

func TestMigrationsRecorded(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{})
	defer db.Close()
	checkMigrations(t, db)
}

// TestLongTermsMigrated: long terms a database held as they are before
// migration 0002 (a word that compresses well fits a B-tree entry) are
// rekeyed, so queries find them and removals find their postings.
func TestLongTermsMigrated(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	word := strings.Repeat("ha", 3000)
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "laugh "+word), textDoc("b.md", "laugh")}, nil); err != nil {
		t.Fatal(err)
	}
	// Back to what version 1 wrote: the term as it is, everywhere.
	full, key := []byte(word), []byte(termKey(word))
	for _, q := range []string{`UPDATE postings SET term = $1 WHERE term = $2`, `UPDATE terms SET term = $1 WHERE term = $2`,
		`UPDATE chunks SET terms = array_replace(terms, $2, $1)`} {
		if _, err := db.pool.Exec(ctx, q, full, key); err != nil {
			t.Fatal(err)
		}
	}
	asVersion(t, db, 1)
	db.Close()
	db = openTest(t, dsn, Options{})
	defer db.Close()
	checkMigrations(t, db)
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
	if got, err := db.Lexical(ctx, recall.LexicalQuery{Text: word}); err != nil || len(got) != 1 {
		t.Errorf("the long word after the migration: %v, %v; want its chunk", got, err)
	}
	if _, _, err := db.Delete(ctx, "a.md"); err != nil {
		t.Fatal(err)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("after deleting the chunk of a migrated term: %v", err)
	}
}

// TestNewerSchemaRefused: a database migrated by a newer recall is refused,
// not guessed at, naming the newest version it records and the way back.
func TestNewerSchemaRefused(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{len(ms) + 1, 9999} {
		if _, err := db.pool.Exec(ctx, `INSERT INTO recall_schema_migrations VALUES ($1, 'future', now())`, v); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	for _, o := range []Options{{}, {ReadOnly: true}} {
		_, err := Open(ctx, dsn, o)
		if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema version 9999;") || !strings.Contains(err.Error(), "or a backup made before") {
			t.Errorf("Open(%+v) of a newer schema: %v; want ErrNewerSchema naming version 9999 and a backup", o, err)
		}
	}
}

// A store left open while a newer recall upgrades the schema (servers
// upgraded one at a time) writes nothing more: its writes would follow its
// own schema's rules. Reads go on.
func TestWriteAfterANewerUpgradeRefused(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	if _, err := db.Write(ctx, []recall.Document{textDoc("before.md", "before the upgrade")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO recall_schema_migrations VALUES ($1, 'future', now())`, db.known+1); err != nil {
		t.Fatal(err)
	}
	_, err := db.Write(ctx, []recall.Document{textDoc("after.md", "after the upgrade")}, nil)
	if !errors.Is(err, ErrNewerSchema) {
		t.Errorf("a write after a newer recall upgraded the schema: %v; want ErrNewerSchema", err)
	}
	// What a server logs, and tells the client whose write it refused, is
	// the reason and what to do: it was "internal error".
	if msg := recall.ErrorMessage(err); recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(msg, "restart this process with the newer recall") {
		t.Errorf("the refused write's code and message: %s %q; want unavailable, saying to restart with the newer recall", recall.ErrorCode(err), msg)
	}
	if _, err := db.Source(ctx, "after.md"); !recall.IsNotFound(err) {
		t.Errorf("the refused write's source: %v; want it not stored", err)
	}
	if _, err := db.Source(ctx, "before.md"); err != nil {
		t.Errorf("reads go on: %v", err)
	}
}

// asVersion leaves db's schema as a recall of schema version v (1 to 5)
// left it: the later migrations not recorded, and what they added undone,
// so that opening it upgrades it: 0005's vector keys (back to 0004's
// form), 0004's (each vector keyed by the hash of its
// chunks' text, which must be one text), 0003's
// sources.reading and 0006's sources.zone. (0002 only rekeys long terms, which a test database
// without them need not undo.)
func asVersion(t testing.TB, db *DB, v int) {
	t.Helper()
	// Before 0005, a chunk with a header had the key of the hex sha256 of
	// it, a NUL byte and its text's hash (storetest.KeyV9).
	keyV9 := `encode(sha256(convert_to(header, 'UTF8') || '\x00'::bytea || convert_to(hash, 'UTF8')), 'hex')`
	var qs []string
	if v < 5 {
		qs = append(qs,
			`UPDATE vectors v SET vkey = k.old FROM (SELECT DISTINCT vkey, `+keyV9+` AS old FROM chunks WHERE header != '') k
			WHERE v.vkey = k.vkey`,
			`UPDATE chunks SET vkey = `+keyV9+` WHERE header != ''`)
	}
	if v < 4 {
		qs = append(qs,
			`UPDATE vectors v SET vkey = (SELECT c.hash FROM chunks c WHERE c.vkey = v.vkey LIMIT 1)`,
			`ALTER TABLE vectors RENAME COLUMN vkey TO hash`,
			`ALTER INDEX vectors_vkey RENAME TO vectors_hash`,
			`ALTER TABLE chunks DROP COLUMN vkey`) // and its index
	}
	if v < 3 {
		qs = append(qs, `ALTER TABLE sources DROP COLUMN reading`)
	}
	if v < 6 {
		qs = append(qs, `ALTER TABLE sources DROP COLUMN zone`)
	}
	if v < 7 {
		qs = append(qs, `DROP TABLE refusals`)
	}
	qs = append(qs, `DELETE FROM recall_schema_migrations WHERE version > `+strconv.Itoa(v))
	for _, q := range qs {
		if _, err := db.pool.Exec(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
}

// An upgrade from version 3 keys the stored vectors by header and text
// without embedding anything (storetest.VectorKeysUpgrade).
func TestVectorKeysUpgrade(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	storetest.VectorKeysUpgrade(t, db, func(t *testing.T, s recall.Store) {
		asVersion(t, db, 3)
		db.Close()
	}, func(t *testing.T) recall.Store { return openChecked(t, dsn) })
}

// openChecked opens the database of dsn, upgrading it, and checks it.
func openChecked(t *testing.T, dsn string) *DB {
	t.Helper()
	db := openTest(t, dsn, Options{})
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("integrity check after the upgrade: %v", err)
	}
	return db
}

// An upgrade from version 4 gives every chunk with a header a key that
// begins with its text's hash and renames its vectors
// (storetest.VectorKeyPrefixUpgrade); the SQL's old keys are the Go ones.
func TestVectorKeyPrefixUpgrade(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	storetest.VectorKeyPrefixUpgrade(t, db, func(t *testing.T, s recall.Store) {
		asVersion(t, db, 4)
		rows, err := db.pool.Query(ctx, `SELECT hash, vkey, header FROM chunks`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var hash, vkey, header string
			if err := rows.Scan(&hash, &vkey, &header); err != nil {
				t.Fatal(err)
			}
			if vkey != storetest.KeyV9(header, hash) {
				t.Errorf("version 4's key of %q under %q: %s; want %s", hash, header, vkey, storetest.KeyV9(header, hash))
			}
		}
		rows.Close()
		db.Close()
	}, func(t *testing.T) recall.Store { return openChecked(t, dsn) })
}

// Opening a database an older recall set up says it upgrades it, before it
// does, with both versions; a current one says nothing.
func TestUpgradingIsSaid(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	last := db.known
	asVersion(t, db, 2)
	db.Close()
	var said [][2]int
	say := func(from, to int) { said = append(said, [2]int{from, to}) }
	for range 2 {
		db, err := Open(ctx, dsn, Options{Upgrading: say})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	if len(said) != 1 || said[0] != [2]int{2, last} {
		t.Errorf("told %v; want once, from 2 to %d", said, last)
	}
}

// KeepSchema (recall check) leaves a database an older recall set up at
// its version, refusing writes, and checks it; a later Open upgrades it.
func TestKeepSchema(t *testing.T) {
	// Version 2 is before vector keys, 4 before they began with the
	// text's hash.
	for _, v := range []int{2, 4} {
		t.Run(fmt.Sprint("version ", v), func(t *testing.T) { keepSchema(t, v) })
	}
}

func keepSchema(t *testing.T, v int) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	d := textDoc("a.md", "kept words")
	d.Chunks[0].Header = "Kept (2024-01-02)"
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "sp", Provider: "test", Model: "m", Dim: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write(ctx, []recall.Document{d}, []recall.Vector{{Space: "sp", Key: d.Chunks[0].VectorKey(), Vec: []float32{0.6, 0.8}}}); err != nil {
		t.Fatal(err)
	}
	last := db.known
	asVersion(t, db, v)
	db.Close()
	upgraded := false
	kept, err := Open(ctx, dsn, Options{KeepSchema: true, Existing: true, Upgrading: func(int, int) { upgraded = true }})
	if err != nil {
		t.Fatal(err)
	}
	schema, older := kept.OlderSchema()
	if want := fmt.Sprintf("version %d of %d", v, last); !older || schema != want || upgraded {
		t.Errorf("OlderSchema = %q, %v (upgrading told: %v); want %q, left so", schema, older, upgraded, want)
	}
	if err := kept.IntegrityCheck(ctx); err != nil {
		t.Errorf("check of the older schema: %v", err)
	}
	if _, err := kept.Write(ctx, []recall.Document{textDoc("b.md", "more")}, nil); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("a write to a kept older schema: %v; want it refused", err)
	}
	kept.Close()
	db = openTest(t, dsn, Options{})
	defer db.Close()
	var version int
	if err := db.pool.QueryRow(ctx, `SELECT max(version) FROM `+migrationsTable).Scan(&version); err != nil || version != last {
		t.Errorf("schema version %d after an Open without KeepSchema (%v); want %d", version, err, last)
	}
	if _, older := db.OlderSchema(); older {
		t.Error("an upgraded database says it is older")
	}
	if vecs, err := db.VectorsByKey(ctx, "sp", []string{d.Chunks[0].VectorKey()}); err != nil || len(vecs) != 1 {
		t.Errorf("the vector after the upgrade: %v, %v", vecs, err)
	}
}

// An upgrade waits for the write in progress and holds writes until it
// commits: a server of this version checks the schema version under the
// writer lock, and found the old one while an upgrade was under way (its
// transaction not yet committed), then wrote by the old rules after it.
func TestUpgradeWaitsForTheWriterLock(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	defer db.Close()
	asVersion(t, db, 2)
	release := holdWriterLock(t, db) // a write in progress
	opened := make(chan error, 1)
	go func() {
		up, err := Open(ctx, dsn, Options{})
		if err == nil {
			up.Close()
		}
		opened <- err
	}()
	for waiting := 0; waiting == 0; {
		select {
		case err := <-opened:
			release()
			t.Fatalf("the upgrade committed while a write held the writer lock (%v)", err)
		default:
		}
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	release()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.pool.QueryRow(ctx, `SELECT max(version) FROM recall_schema_migrations`).Scan(&v); err != nil || v != db.known {
		t.Errorf("schema version after the upgrade: %d, %v; want %d", v, err, db.known)
	}
}

// TestReadOnlyAndExisting: a read-only store (dry runs) and one opened
// with Existing (commands that only read) refuse a database recall has not
// set up and leave it untouched; a read-only store reads and cannot write;
// a read-only store refuses a schema it would have to migrate.
func TestReadOnlyAndExisting(t *testing.T) {
	dsn := pgtest.Server(t)
	for _, o := range []Options{{ReadOnly: true}, {Existing: true}} {
		if _, err := Open(ctx, dsn, o); !recall.IsNotFound(err) {
			t.Errorf("Open(%+v) of a database recall has not set up: %v; want ENOTFOUND", o, err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var tables int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables)
	conn.Close(ctx)
	if err != nil || tables != 0 {
		t.Fatalf("the refused opens left %d tables (%v)", tables, err)
	}

	db := openTest(t, dsn, Options{})
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "persisted words")}, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro := openTest(t, dsn, Options{ReadOnly: true})
	defer ro.Close()
	if _, err := ro.Source(ctx, "a.md"); err != nil {
		t.Errorf("read-only read: %v", err)
	}
	if _, err := ro.Write(ctx, []recall.Document{textDoc("b.md", "more words")}, nil); err == nil {
		t.Errorf("a read-only store wrote")
	}
	if _, err := ro.pool.Exec(ctx, `DELETE FROM recall_schema_migrations WHERE version = (SELECT max(version) FROM recall_schema_migrations)`); err == nil {
		t.Errorf("a read-only store's connection could write")
	}
	rw := openTest(t, dsn, Options{})
	if _, err := rw.pool.Exec(ctx, `DELETE FROM recall_schema_migrations WHERE version = (SELECT max(version) FROM recall_schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	if _, err := Open(ctx, dsn, Options{ReadOnly: true}); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("read-only Open of an older schema: %v; want EINVALID", err)
	}
}

// TestForeignMigrationsTable: another tool's schema_migrations table in
// the same database is not taken for recall's.
func TestForeignMigrationsTable(t *testing.T) {
	dsn := pgtest.Server(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL);
		INSERT INTO schema_migrations VALUES (20240101120000, false)`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, Options{Existing: true}); !recall.IsNotFound(err) {
		t.Errorf("Open(Existing) of a database recall has not set up, beside another tool's table: %v; want ENOTFOUND", err)
	}
	db := openTest(t, dsn, Options{})
	defer db.Close()
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "beside another tool")}, nil); err != nil {
		t.Errorf("write: %v", err)
	}
	checkMigrations(t, db)
}

// A database recall set up opens (no DDL, no lock when the schema is
// current) and searches where it may only be read, and a write is refused
// as forbidden, saying why: it was an internal error, which a server
// answered 500 "internal error" and its background repair logged as just
// that every round. Two ways to only read: a role granted only SELECT, and
// transactions that only read (a standby server, default_transaction_read_only
// for the role or database).
func TestReadOnlyRole(t *testing.T) {
	for _, tc := range []struct {
		name string
		dsn  func(t *testing.T, dsn string) string
		says string
	}{
		{"role granted only SELECT", func(t *testing.T, dsn string) string { return pgtest.ReadOnlyRole(t, dsn) }, "only SELECT can only read"},
		{"transactions only read", func(t *testing.T, dsn string) string {
			if strings.Contains(dsn, "?") {
				return dsn + "&default_transaction_read_only=on"
			}
			return dsn + "?default_transaction_read_only=on"
		}, "only reads here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.Server(t)
			db := openTest(t, dsn, Options{})
			if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "readable words")}, nil); err != nil {
				t.Fatal(err)
			}
			db.Close()
			ro, err := Open(ctx, tc.dsn(t, dsn), Options{Existing: true})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer ro.Close()
			if c, err := ro.Lexical(ctx, recall.LexicalQuery{Text: "readable"}); err != nil || len(c) != 1 {
				t.Errorf("search: %v, %v", c, err)
			}
			_, err = ro.Write(ctx, []recall.Document{textDoc("b.md", "more words")}, nil)
			if recall.ErrorCode(err) != recall.EFORBIDDEN || !strings.Contains(recall.ErrorMessage(err), tc.says) {
				t.Errorf("write: %v", err)
			}
		})
	}
}

func TestReopen(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	res, err := db.Write(ctx, []recall.Document{textDoc("a.md", "persisted words")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openTest(t, dsn, Options{})
	defer db.Close()
	if _, err := db.Source(ctx, "a.md"); err != nil {
		t.Errorf("after reopening: %v", err)
	}
	cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: "persisted"})
	if err != nil || len(cands) != 1 || cands[0].ChunkID != res.Added[0].ID {
		t.Errorf("search after reopening = %+v, %v", cands, err)
	}
	// Ids keep growing across reopening.
	res2, err := db.Write(ctx, []recall.Document{textDoc("b.md", "more words")}, nil)
	if err != nil || res2.Added[0].ID <= res.Added[0].ID {
		t.Errorf("new chunk id %v after %d, %v", res2.Added, res.Added[0].ID, err)
	}
	checkMigrations(t, db)
}

// TestPasswordNeverInErrors: whatever fails when opening, the DSN's
// password is not in the error.
func TestPasswordNeverInErrors(t *testing.T) {
	const pw = "s3cret-Pa55word"
	dsns := []string{
		"postgres://recall:" + pw + "@127.0.0.1:1/nodb?sslmode=disable&connect_timeout=2",
		"postgres://recall:" + pw + "@127.0.0.1:notaport/nodb",
		"postgres://recall:" + pw + "@127.0.0.1:1/nodb?sslmode=nonsense",
		"host=127.0.0.1 port=1 user=recall password=" + pw + " dbname=nodb sslmode=disable connect_timeout=2",
		"host=127.0.0.1 port=1 user=recall password='" + pw + "' dbname=nodb sslmode=bogus",
		"postgres://recall:" + pw + "@[::1/nodb",
		"postgres://recall:p@" + pw + "@127.0.0.1:1/nodb", // an unescaped @: parsers disagree on the password
		"postgresql://recall@127.0.0.1:1/nodb?password=" + pw + "&connect_timeout=2",
	}
	for _, dsn := range dsns {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		db, err := Open(c, dsn, Options{})
		cancel()
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", dsn)
			continue
		}
		for e := error(err); e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), pw) {
				t.Errorf("error of Open holds the password: %v", e)
			}
		}
		if strings.Contains(recall.ErrorMessage(err), pw) {
			t.Errorf("client message holds the password: %s", recall.ErrorMessage(err))
		}
		if d := Describe(dsn); strings.Contains(d, pw) {
			t.Errorf("Describe(%q) = %q holds the password", dsn, d)
		}
	}
	if d := Describe("postgres://ann:pw@db.example:6543/recall?sslmode=verify-full&password=x"); d != "postgres://ann@db.example:6543/recall" {
		t.Errorf("Describe = %q", d)
	}
}

// TestCanceledWhileWaitingForWriter: a write waiting for the writer lock
// gives up when its context ends, and stores nothing.
func TestCanceledWhileWaitingForWriter(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	defer db.Close()
	release := holdWriterLock(t, db)
	defer release()
	c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := db.Write(c, []recall.Document{textDoc("a.md", "waiting")}, nil)
	if recall.ErrorCode(err) != recall.ECANCELED {
		t.Errorf("Write while another holds the writer lock: %v; want canceled", err)
	}
	release()
	if _, err := db.Source(ctx, "a.md"); !recall.IsNotFound(err) {
		t.Errorf("the canceled write was stored: %v", err)
	}
}

// holdWriterLock takes the writer lock as another process's write would,
// until release.
func holdWriterLock(t *testing.T, db *DB) (release func()) {
	t.Helper()
	hold, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, writerLock); err != nil {
		hold.Rollback(ctx)
		t.Fatal(err)
	}
	return func() { hold.Rollback(ctx) }
}

// TestStuckWriterTimesOut: a write waits for a writer that never finishes
// at most LockTimeout, then fails with EUNAVAILABLE, storing nothing.
func TestStuckWriterTimesOut(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{LockTimeout: 300 * time.Millisecond})
	defer db.Close()
	release := holdWriterLock(t, db)
	defer release()
	_, err := db.Write(ctx, []recall.Document{textDoc("a.md", "waiting")}, nil)
	if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(err.Error(), "write lock") {
		t.Errorf("Write while a stuck writer holds the lock: %v; want EUNAVAILABLE naming the lock", err)
	}
	release()
	if _, err := db.Source(ctx, "a.md"); !recall.IsNotFound(err) {
		t.Errorf("the refused write was stored: %v", err)
	}
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "now")}, nil); err != nil {
		t.Errorf("a write once the lock is free: %v", err)
	}
}

// TestStatementTimeoutSparesWriterWait: a statement_timeout set for the
// database, shorter than LockTimeout, does not cut a write's wait for the
// writer lock short (which failed the write as an internal error): the
// write waits LockTimeout and says so.
func TestStatementTimeoutSparesWriterWait(t *testing.T) {
	dsn := pgtest.Server(t)
	setup := openTest(t, dsn, Options{})
	u, _ := url.Parse(dsn)
	_, err := setup.pool.Exec(ctx, `ALTER DATABASE `+strings.TrimPrefix(u.Path, "/")+` SET statement_timeout = '200ms'`)
	setup.Close()
	if err != nil {
		t.Fatal(err)
	}
	db := openTest(t, dsn, Options{LockTimeout: 700 * time.Millisecond})
	defer db.Close()
	release := holdWriterLock(t, db)
	defer release()
	start := time.Now()
	_, err = db.Write(ctx, []recall.Document{textDoc("a.md", "waiting")}, nil)
	if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(err.Error(), "write lock") || time.Since(start) < 700*time.Millisecond {
		t.Errorf("Write while another holds the lock, after %v: %v (code %s); want EUNAVAILABLE naming the lock after LockTimeout",
			time.Since(start).Round(time.Millisecond), err, recall.ErrorCode(err))
	}
	release()
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "now")}, nil); err != nil {
		t.Errorf("a write once the lock is free: %v", err)
	}
}

// TestTableLockedIsUnavailable: a write that waits out lock_timeout on a
// table another session holds (VACUUM FULL, REINDEX, pg_repack) fails
// EUNAVAILABLE, to be retried, not as an internal error.
func TestTableLockedIsUnavailable(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{LockTimeout: 300 * time.Millisecond})
	defer db.Close()
	hold, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `LOCK TABLE postings IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	_, err = db.Write(ctx, []recall.Document{textDoc("a.md", "waiting for the table")}, nil)
	if recall.ErrorCode(err) != recall.EUNAVAILABLE {
		t.Errorf("Write while a table is locked: %v (code %s); want EUNAVAILABLE", err, recall.ErrorCode(err))
	}
}

// TestNoConnectionSlotIsUnavailable: a server (or role, or database) out
// of connection slots refuses the pool a new connection (SQLSTATE 53300):
// EUNAVAILABLE, which servers answer 503, not an internal error.
func TestNoConnectionSlotIsUnavailable(t *testing.T) {
	dsn := pgtest.Server(t)
	admin := openTest(t, dsn, Options{})
	defer admin.Close()
	u, _ := url.Parse(dsn)
	role := "lim_" + strings.TrimPrefix(u.Path, "/")
	if _, err := admin.pool.Exec(ctx, `CREATE ROLE `+role+` LOGIN CONNECTION LIMIT 1`); err != nil {
		t.Skipf("cannot create a role on this server: %v", err)
	}
	defer admin.pool.Exec(ctx, `DROP OWNED BY `+role+`; DROP ROLE `+role)
	if _, err := admin.pool.Exec(ctx, `GRANT SELECT ON ALL TABLES IN SCHEMA public TO `+role); err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	db := openTest(t, u.String(), Options{MaxConns: 4})
	defer db.Close()
	conn, err := db.pool.Acquire(ctx) // the role's one connection
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := db.Source(ctx, "a.md"); recall.ErrorCode(err) != recall.EUNAVAILABLE {
		t.Errorf("a read with no connection slot left: %v (code %s); want EUNAVAILABLE", err, recall.ErrorCode(err))
	}
}

// TestServerGoneIsUnavailable: when the server drops the store's
// connections (a restart, a failover), calls fail with EUNAVAILABLE, which
// servers answer 503, not as internal errors; once it is back they work.
func TestServerGoneIsUnavailable(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{MaxConns: 2})
	defer db.Close()
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "still here")}, nil); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dsn)
	name := strings.TrimPrefix(u.Path, "/")
	admin := *u
	admin.Path = "/postgres"
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for range 4 {
		_, err := db.Source(ctx, "a.md")
		if err != nil {
			failed++
			if recall.ErrorCode(err) != recall.EUNAVAILABLE {
				t.Errorf("a read on a dropped connection: %v (code %q); want EUNAVAILABLE", err, recall.ErrorCode(err))
			}
		}
	}
	if failed == 0 {
		t.Log("the pool replaced the dropped connections before any read")
	}
	if _, err := db.Source(ctx, "a.md"); err != nil {
		t.Errorf("a read once the server is back: %v", err)
	}
}

// TestPingWhileTheDatabaseIsDown: Ping, which a server's /readyz asks,
// fails while the database takes no connections (its sessions ended, as in
// a restart) and succeeds once it takes them again.
func TestPingWhileTheDatabaseIsDown(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{MaxConns: 2})
	defer db.Close()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	down, up := pgtest.Outage(t, dsn)
	down()
	if err := db.Ping(ctx); recall.ErrorCode(err) != recall.EUNAVAILABLE {
		t.Errorf("Ping while the database takes no connections: %v (code %q); want EUNAVAILABLE", err, recall.ErrorCode(err))
	}
	up()
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping once the database is back: %v", err)
	}
}

// TestTextPostgresCannotHold: NUL characters are refused up front with
// EINVALID, not as a driver error.
func TestTextPostgresCannotHold(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{})
	defer db.Close()
	_, err := db.Write(ctx, []recall.Document{textDoc("a.md", "nul\x00inside")}, nil)
	if recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("chunk text with NUL: %v; want EINVALID", err)
	}
}

// TestManyUnitVectors: a text embedded as many units stores more values
// than pgvector allows in one vector; it is kept one row per unit.
func TestManyUnitVectors(t *testing.T) {
	db := openTest(t, pgtest.Server(t), Options{})
	defer db.Close()
	if _, err := db.CreateSpace(ctx, recall.VectorSpace{Name: "big", Provider: "p", Model: "m", Dim: 1536}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "long text")}, nil); err != nil {
		t.Fatal(err)
	}
	vec := make([]float32, 1536*12)
	for i := range vec {
		vec[i] = float32(i%97) / 97
	}
	h := recall.TextHash("long text")
	if err := db.PutVectors(ctx, []recall.Vector{{Space: "big", Key: h, Vec: vec}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.VectorsByKey(ctx, "big", []string{h})
	if err != nil || !slices.Equal(got[h], vec) {
		t.Errorf("VectorsByKey: %d values, %v; want the %d stored", len(got[h]), err, len(vec))
	}
	if c, _ := db.Census(ctx, "big"); c.Vectors != 1 {
		t.Errorf("census counts %d vectors; want 1 text", c.Vectors)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

// TestKeyValueDSN: a key=value connection string works as a URL does.
func TestKeyValueDSN(t *testing.T) {
	u, err := url.Parse(pgtest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable",
		u.Hostname(), u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"))
	db := openTest(t, dsn, Options{})
	defer db.Close()
	if _, err := db.Write(ctx, []recall.Document{textDoc("a.md", "key value")}, nil); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Census(ctx, ""); err != nil || c.Chunks != 1 {
		t.Errorf("Census = %+v, %v", c, err)
	}
}

// TestVectorExtensionNeedsSuperuser: a role that may not create pgvector
// gets told what to do; once a superuser has created it, the role opens
// the database.
func TestVectorExtensionNeedsSuperuser(t *testing.T) {
	dsn := pgtest.Server(t)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	u, _ := url.Parse(dsn)
	db := strings.TrimPrefix(u.Path, "/")
	role := "r_" + db
	if _, err := admin.Exec(ctx, `CREATE ROLE `+role+` LOGIN`); err != nil {
		t.Skipf("cannot create a role on this server: %v", err)
	}
	defer admin.Exec(ctx, `DROP OWNED BY `+role+`; DROP ROLE `+role)
	if _, err := admin.Exec(ctx, `GRANT ALL ON DATABASE `+db+` TO `+role+`; GRANT ALL ON SCHEMA public TO `+role); err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	_, err = Open(ctx, u.String(), Options{})
	if recall.ErrorCode(err) != recall.EUNAVAILABLE || !strings.Contains(recall.ErrorMessage(err), "CREATE EXTENSION vector") {
		t.Fatalf("Open by a role that may not create pgvector: %v; want EUNAVAILABLE saying how to create it", err)
	}
	if _, err := admin.Exec(ctx, `CREATE EXTENSION vector`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, u.String(), Options{})
	if err != nil {
		t.Fatalf("Open once the extension exists: %v", err)
	}
	s.Close()
}

// Two handles on one database, as two servers have: a sweep lock taken
// through one holds against the other.
func TestVaultLockShared(t *testing.T) {
	dsn := pgtest.Server(t)
	a, b := openTest(t, dsn, Options{}), openTest(t, dsn, Options{})
	defer a.Close()
	defer b.Close()
	storetest.VaultLockShared(t, a, b)
}

// TestVaultLockOutlivesIdleSessionTimeout: a database (or role) with
// idle_session_timeout does not end the sweep lock's idle session while
// the sweep parses and embeds, which let a second sweep of the vault take
// the lock.
func TestVaultLockOutlivesIdleSessionTimeout(t *testing.T) {
	dsn := pgtest.Server(t)
	setup := openTest(t, dsn, Options{})
	u, _ := url.Parse(dsn)
	_, err := setup.pool.Exec(ctx, `ALTER DATABASE `+strings.TrimPrefix(u.Path, "/")+
		` SET idle_session_timeout = '300ms'; ALTER DATABASE `+strings.TrimPrefix(u.Path, "/")+` SET idle_in_transaction_session_timeout = '300ms'`)
	setup.Close()
	if err != nil {
		t.Fatal(err)
	}
	a, b := openTest(t, dsn, Options{}), openTest(t, dsn, Options{})
	defer a.Close()
	defer b.Close()
	unlock, err := a.LockVault(ctx, "/vault", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	time.Sleep(time.Second) // the sweep parses and embeds
	if unlock2, err := b.LockVault(ctx, "/vault", nil); err == nil {
		unlock2()
		t.Errorf("a second sweep took the lock of a vault still being swept")
	}
}

// A sweep killed while it waits for the lock leaves no session behind: one
// blocked in pg_advisory_lock outlived its process (the server does not
// read from a session waiting for a lock), queued there and holding a
// connection slot until the holder let go.
func TestVaultLockWaiterKilled(t *testing.T) {
	const vault = "/vaults/waited-for"
	if dsn := os.Getenv("RECALL_TEST_LOCK_WAITER"); dsn != "" {
		db, err := Open(ctx, dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		db.LockVault(ctx, vault, func(error) { fmt.Println("waiting") })
		t.Fatal("the waiter got the lock")
	}
	dsn := pgtest.Server(t)
	a := openTest(t, dsn, Options{})
	defer a.Close()
	unlock, err := a.LockVault(ctx, vault, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	sessions := func() int {
		var n int
		if err := a.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE $1`, holderPrefix+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestVaultLockWaiterKilled$")
	cmd.Env = append(os.Environ(), "RECALL_TEST_LOCK_WAITER="+dsn)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "waiting\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the waiter said %q", line)
	}
	// Let its wait get under way on the server, then kill it.
	time.Sleep(2 * store.VaultLockRetry)
	if n := sessions(); n != 2 {
		t.Errorf("%d sweep lock sessions while one holds and one waits, want 2", n)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The server ends a session a moment after its client goes.
	n := sessions()
	for i := 0; i < 100 && n != 1; i++ {
		time.Sleep(50 * time.Millisecond)
		n = sessions()
	}
	if n != 1 {
		t.Errorf("%d sweep lock sessions 5 s after the waiter was killed, want the holder's alone", n)
	}
}

// Migration 6 records no zone for the sources before it
// (storetest.ZoneUpgrade).
func TestSourceZoneUpgrade(t *testing.T) {
	dsn := pgtest.Server(t)
	db := openTest(t, dsn, Options{})
	storetest.ZoneUpgrade(t, db, func(t *testing.T, s recall.Store) {
		asVersion(t, db, 5)
		db.Close()
	}, func(t *testing.T) recall.Store { return openChecked(t, dsn) })
}
