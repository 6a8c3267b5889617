package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/recall-mcp/recall"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Checking the file for damage: at open (checkFirst), in the background
// (the walk), and on demand (IntegrityCheck).

// walk is one check of the whole file: done is closed when it has ended,
// with err what it found.
type walk struct {
	done chan struct{}
	err  error
}

// final reports whether an ended walk's outcome stands: it passed, or it
// found damage. One that could not finish (an I/O error) is walked again
// by the next write.
func (w *walk) final() bool {
	return w.err == nil || errors.Is(w.err, ErrCorrupt)
}

// checkFirst checks the file, when it holds a database already, on a
// connection of its own that cannot write: all of it (check), or only its
// schema when opts.Check leaves the walk for later (walkLeft).
//
// A process killed in the first transaction of a new database, before it
// turned the database to WAL, leaves a hot rollback journal, which only a
// connection that may write can roll back (SQLite's own recovery: the
// unfinished transaction is undone); one that cannot fails with
// SQLITE_READONLY_ROLLBACK, and the database could never be opened again.
// A store that may write lets a writer connection roll it back, then checks.
func (db *DB) checkFirst(ctx context.Context) error {
	if fi, err := os.Stat(db.path); err != nil || fi.Size() == 0 {
		return nil // new: nothing to check
	}
	check := func() error {
		ro, err := db.checkConn()
		if err != nil {
			return err
		}
		defer ro.Close()
		wal, journal := db.logsPending()
		if db.opts.Check != CheckAtOpen && !journal {
			if err := checkSchema(ctx, ro); err == nil {
				db.walkLeft = true
				db.noFold = wal
				return nil
			} else if isCorrupt(err) {
				return db.openErr(err)
			} else if extendedCode(err) == sqlite3.SQLITE_READONLY_ROLLBACK {
				return err
			}
			// Older (to be migrated) or newer: the whole check first, and
			// the migration says what it finds.
		}
		return db.check(ctx, ro)
	}
	err := check()
	if extendedCode(err) != sqlite3.SQLITE_READONLY_ROLLBACK {
		return err
	}
	if db.opts.ReadOnly {
		return recall.WrapError(recall.EUNAVAILABLE, err, "%s holds the unfinished first transaction of a process that stopped; a command that writes (recall sweep) rolls it back", db.path)
	}
	rw, err := sql.Open("sqlite", db.dsnMode("writer"))
	if err != nil {
		return fmt.Errorf("open %s: %w", db.path, err)
	}
	var n int
	err = rw.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n)
	if cerr := rw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return db.openErr(err)
	}
	return check()
}

// checkConn opens the one connection a check reads through: it cannot
// write, so closing it never folds a log into the file.
func (db *DB) checkConn() (*sql.DB, error) {
	ro, err := sql.Open("sqlite", db.dsnMode("mode=ro"))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", db.path, err)
	}
	ro.SetMaxOpenConns(1)
	return ro, nil
}

// logsPending reports whether a write-ahead log or a rollback journal
// beside the file may hold something: a clean close leaves neither.
// A log that another process has open (a server's) cannot be told apart
// from one a crash left: a store that has not walked the file leaves it as
// it is (noFold). A journal is rolled back by a writer before anything
// reads the file (see checkFirst).
func (db *DB) logsPending() (wal, journal bool) {
	pending := func(suffix string) bool {
		fi, err := os.Stat(db.path + suffix)
		return err == nil && fi.Size() > 0 || err != nil && !errors.Is(err, fs.ErrNotExist)
	}
	return pending("-wal"), pending("-journal")
}

// startWalk returns the walk of the whole file, on a connection of its own,
// when Open left it out (walkLeft), starting it when none has started or
// the last could not finish: from Open for CheckInBackground, from the
// first write (FileChecked, from writeTx) for CheckOnRead. Writes wait for
// it. It returns nil once Close has begun.
func (db *DB) startWalk() *walk {
	db.walkMu.Lock()
	defer db.walkMu.Unlock()
	if db.walkClosed {
		return nil
	}
	if w := db.walk; w != nil {
		select {
		case <-w.done:
			if w.final() {
				return w
			}
		default:
			return w // running
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &walk{done: make(chan struct{})}
	db.walk, db.stopWalk = w, cancel
	go func() {
		defer close(w.done)
		ro, err := db.checkConn()
		if err == nil {
			err = db.check(ctx, ro)
			ro.Close()
		}
		if err != nil && ctx.Err() != nil {
			err = errClosedChecking
		}
		w.err = err
	}()
	return w
}

var errClosedChecking = recall.Errorf(recall.EUNAVAILABLE, "the store was closed before it had checked its file")

// FileChecked waits until the whole file has been checked and returns what
// the check found: nil; damage (EDAMAGED, wrapping ErrCorrupt), after which
// every write fails with it; or the error that kept the check from
// finishing, which fails the writes waiting for it (a file not known to be
// sound is not written) and makes the next write walk again. It returns nil
// at once when Open checked the whole file (CheckAtOpen, or a schema to
// migrate) and starts the walk of a CheckOnRead store.
func (db *DB) FileChecked(ctx context.Context) error {
	if !db.walkLeft {
		return nil
	}
	return db.waitWalk(ctx, db.startWalk())
}

// waitWalk waits for w (nil: Close has begun) and says what its outcome
// means for a write.
func (db *DB) waitWalk(ctx context.Context, w *walk) error {
	if w == nil {
		return errClosedChecking
	}
	select {
	case <-w.done:
		if w.final() || w.err == errClosedChecking {
			return w.err
		}
		// The detail goes to the server's log; a client is told why its
		// write was refused, not where the file is.
		return recall.WrapError(recall.EUNAVAILABLE, w.err, "the database file could not be checked, so nothing was written; retry")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// check runs PRAGMA quick_check on every ordinary table, which walks each
// b-tree and its indexes in time proportional to the file size. Checking
// table by table leaves out what a bare quick_check adds: the FTS5 index's
// own deep check (ten times the cost, seconds on a large store, at every
// start of a command), and the accounting of unused pages. IntegrityCheck
// runs both.
func (db *DB) check(ctx context.Context, conn *sql.DB) error {
	rows, err := conn.QueryContext(ctx,
		`SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name`)
	if err != nil {
		return db.openErr(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return db.openErr(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return db.openErr(err)
	}
	var problems []string
	for _, table := range tables {
		// PRAGMA arguments cannot be bound; the names come from the schema.
		lines, err := pragmaLines(ctx, conn, `PRAGMA quick_check("`+strings.ReplaceAll(table, `"`, `""`)+`")`)
		if err != nil {
			return db.openErr(err)
		}
		problems = append(problems, lines...)
	}
	if len(problems) > 0 {
		return db.corrupt("quick_check", problems)
	}
	return nil
}

// pragmaLines runs a check pragma and returns its lines other than "ok".
func pragmaLines(ctx context.Context, conn *sql.DB, pragma string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, pragma)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	return problems, rows.Err()
}

func (db *DB) corrupt(check string, problems []string) error {
	if len(problems) > 5 {
		problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
	}
	return damaged(fmt.Errorf("%s: %w (%s: %s)", db.path, ErrCorrupt, check, strings.Join(problems, "; ")))
}

func (db *DB) openErr(err error) error {
	switch {
	case isCorrupt(err):
		return damaged(fmt.Errorf("%s: %w: %v", db.path, ErrCorrupt, err))
	case diskFull(err):
		return recall.Errorf(recall.EUNAVAILABLE, "open %s: the disk holding the database is full, and SQLite needs a few kilobytes beside the file even to read it (its -shm index): free some space and retry", db.path)
	case extendedCode(err) == sqlite3.SQLITE_READONLY_DIRECTORY:
		return recall.Errorf(recall.EFORBIDDEN, "open %s: recall may not create files in the database's folder, and SQLite needs two beside the file even to read it (%s-wal and -shm): let the user recall runs as write to the folder, or copy the database to one it may write", db.path, filepath.Base(db.path))
	case readOnlyFile(err):
		return recall.Errorf(recall.EFORBIDDEN, "open %s: %s", db.path, readOnlyAdvice)
	}
	return fmt.Errorf("open %s: %w", db.path, err)
}

func isCorrupt(err error) bool {
	code := sqliteCode(err)
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// sqliteCode is the primary result code of a SQLite error (0 for others).
func sqliteCode(err error) int {
	return extendedCode(err) & 0xff
}

// extendedCode is the extended result code of a SQLite error (0 for
// others).
func extendedCode(err error) int {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0
	}
	return se.Code()
}

// IntegrityCheck runs SQLite's full PRAGMA integrity_check, which includes
// the FTS5 index's own check (SQLite 3.44 and later), and the store's
// invariants: every vector's key is held by a chunk, every source's chunk
// count is its number of chunks, every chunk has its text. Any failure
// wraps ErrCorrupt; damage is reported as DamageListed reports it (the
// error is the list). It reads through the read pool only: a writer that
// connected for a check and closed last would fold a log into a file the
// check finds damaged.
func (db *DB) IntegrityCheck(ctx context.Context) error {
	return DamageListed(db.integrityCheck(ctx))
}

func (db *DB) integrityCheck(ctx context.Context) error {
	conn := db.ro
	problems, err := pragmaLines(ctx, conn, "PRAGMA integrity_check")
	if err != nil {
		if isCorrupt(err) {
			return db.corrupt("integrity_check", []string{err.Error()})
		}
		return db.fail(ctx, err, "integrity check")
	}
	if len(problems) > 0 {
		return db.corrupt("integrity_check", problems)
	}
	if db.older != nil {
		// The invariants are of this binary's schema: an older file is
		// checked by SQLite alone, FTS5's index included.
		return nil
	}
	invariants := []struct{ what, query string }{
		{"vectors without a chunk", `SELECT count(*) FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE ` + holdsKey("c", "v.vkey") + `)`},
		{"sources whose chunk_count is wrong", `SELECT count(*) FROM sources s WHERE chunk_count != (SELECT count(*) FROM chunks c WHERE c.sid = s.sid)`},
		{"chunks without text", `SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunk_texts t WHERE t.id = c.id)`},
		{"texts without a chunk", `SELECT count(*) FROM chunk_texts t WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = t.id)`},
		{"chunks of no source", `SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM sources s WHERE s.sid = c.sid)`},
		{"chunks whose source attributes are stale", `SELECT count(*) FROM chunks c JOIN sources s ON s.sid = c.sid
			WHERE c.kind != s.kind OR c.owner != s.owner OR c.category != s.category
			OR c.date_lo IS NOT s.date_lo OR c.date_hi IS NOT s.date_hi`},
		{"read spaces", `SELECT CASE WHEN count(*) > 1 THEN count(*) ELSE 0 END FROM spaces WHERE is_read`},
		// FTS5's own check cannot see these: the table is contentless.
		{"chunks without a full-text row", `SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM chunks_fts f WHERE f.rowid = c.id)`},
		{"full-text rows without a chunk", `SELECT count(*) FROM chunks_fts f WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = f.rowid)`},
		{"vectors of the wrong size for their space", `SELECT count(*) FROM vectors v JOIN spaces sp ON sp.name = v.space
			WHERE length(v.vec) = 0 OR length(v.vec) % (4 * sp.dim) != 0`},
	}
	for _, inv := range invariants {
		var n int
		if err := conn.QueryRowContext(ctx, inv.query).Scan(&n); err != nil {
			return db.fail(ctx, err, "integrity check")
		}
		if n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", n, inv.what))
		}
	}
	if len(problems) > 0 {
		return db.corrupt("invariants", problems)
	}
	return nil
}
