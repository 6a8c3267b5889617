// Package sqlite is recall's embedded store: one SQLite file (pure Go, no
// cgo) holding sources, chunks, an FTS5 full-text index, vector spaces and
// vectors, and the sweep log. It implements recall.Store.
//
// Writes go through one connection and one transaction per call, in WAL mode
// with synchronous=FULL: a committed write is on disk before the call
// returns, so neither a crashed process nor a lost machine loses it, and
// neither corrupts the file. Reads use a pool of their own, so searches run while
// a sweep writes.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// ErrCorrupt is wrapped by every error that damage in the database file
// causes (from Open, IntegrityCheck, a read that meets it, a write refused
// because of it), and their code is recall.EDAMAGED. The store never
// repairs the file by deleting things: restore a backup.
var ErrCorrupt = errors.New("database is corrupt")

// damaged makes the error of damage: a client is told only that a backup
// is needed, and where to see what is damaged; detail, which wraps
// ErrCorrupt and names the file, is for the log and the command line.
func damaged(detail error) error {
	return recall.WrapError(recall.EDAMAGED, detail, damagedAdvice+" (`recall check` lists the damage)")
}

const damagedAdvice = "the database file is damaged: restore a backup"

// DamageListed returns err, when it is the error of damage in the file,
// with the advice alone: for `recall check`, which lists the damage itself
// and would otherwise send its reader to itself. Other errors are returned
// as they are.
func DamageListed(err error) error {
	var re *recall.Error
	if !errors.As(err, &re) || re.Code != recall.EDAMAGED || !errors.Is(err, ErrCorrupt) {
		return err
	}
	return recall.WrapError(recall.EDAMAGED, re.Err, damagedAdvice)
}

// ErrReadOnly is wrapped by every write to a store opened read-only.
var ErrReadOnly = recall.Errorf(recall.EINVALID, "the store is open read-only")

// Options tune how a database is opened. The zero value is a good default.
type Options struct {
	// ReadOnly opens an existing database without writing to it: no
	// migrations run and every write fails with ErrReadOnly.
	ReadOnly bool
	// Readers is the size of the read connection pool (default 4).
	Readers int
	// CacheMiB is each connection's page cache in MiB (default 32).
	CacheMiB int
	// BusyTimeout is how long a statement waits for a lock held by another
	// process before failing (default 10s). A write waits for the write
	// lock by trying again every millisecond or two (see begin).
	BusyTimeout time.Duration
	// LexicalBudget is about how many matching chunk rows a full-text
	// query may rank before its most common words stop selecting candidates
	// and only add to the ranking (default 2000); no query ranks more than
	// twice as many. See Lexical.
	LexicalBudget int
	// Check is how much of an existing file Open checks (CheckAtOpen,
	// the zero value: all of it).
	Check CheckMode
	// Upgrading, when set, is called before Open upgrades the schema of a
	// database an older recall wrote, with its version and this binary's:
	// older versions cannot open the file afterwards, and rebuilding the
	// indexes of a large archive takes a while, so a command says so.
	Upgrading func(from, to int)
	// Resuming, when set, is called instead of Upgrading when the upgrade
	// is the completion of one that stopped part-way (a first open or an
	// upgrade killed between two migrations): the file is not an older
	// recall's, only unfinished.
	Resuming func(from, to int)
	// KeepSchema leaves a database an older recall wrote at its schema
	// version: Open does not upgrade it but opens it read-only (writes
	// fail with ErrReadOnly), for commands that read the whole file
	// whatever its version (recall check, recall backup), so a copy made
	// before an upgrade still opens in the recall that wrote it. Only
	// IntegrityCheck and Backup are meant for such a store; OlderSchema
	// says whether Open left it so.
	KeepSchema bool
}

// CheckMode says when a store checks an existing file for damage.
//
// Walking the whole file (PRAGMA quick_check of every table; see check)
// reads every page: 1.2 s warm and 20 s or more with a cold page cache at
// 100k chunks, for a search that reads a few hundred pages and a server
// that a client starts and waits on. CheckOnRead and CheckInBackground
// leave that walk out of Open: it checks the schema, and every page a
// query reads is checked as it is read (cell_size_check); damage met that
// way is reported as ErrCorrupt, like damage found at open. Both walk the
// whole file in Open when the schema needs migrating. When a log beside
// the file holds commits (a running server's, or one a crash left), both
// read beside it with connections that cannot fold it into the file
// (noFold): a damaged file must be refused as it is, and only a writer,
// which connects after the walk has passed, folds the log.
type CheckMode int

const (
	// CheckAtOpen walks the whole file before Open returns: for a command
	// that writes, so it never writes into a damaged file.
	CheckAtOpen CheckMode = iota
	// CheckOnRead checks only what is read: for a one-off command that
	// reads. Should it write after all (a vector space made for a new
	// embedder), the whole file is walked before that first write, which
	// fails if it finds damage.
	CheckOnRead
	// CheckInBackground walks the whole file after Open returns, on a
	// connection of its own, while the store answers reads: for a server.
	// Writes wait for the walk and fail with its error if it finds damage
	// or cannot finish (reads go on); FileChecked reports the outcome.
	CheckInBackground
)

func (o *Options) defaults() {
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.CacheMiB <= 0 {
		o.CacheMiB = 32
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.LexicalBudget <= 0 {
		o.LexicalBudget = 2000
	}
}

// DB is a recall store in one SQLite file. It is safe for concurrent use.
type DB struct {
	path string
	opts Options
	rw   *sql.DB // the one write connection; nil when read-only
	ro   *sql.DB // the read pool

	// gen counts committed writes; the document-frequency cache is valid
	// for one generation.
	gen atomic.Uint64
	df  dfCache

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // prepared read statements, by SQL text

	ckpt *checkpointer // nil when read-only

	watchMu sync.Mutex
	watch   watcher // answers Census

	// noFold: opened beside a log that holds commits, without checking
	// the whole file; its readers cannot write (mode=ro), so closing last
	// they leave the log as it is, where a query_only reader would fold it
	// into the file. Its writer connects only for a write, after the walk.
	noFold bool
	// walkLeft: Open checked the schema only (see CheckMode), and the
	// walk over the whole file is startWalk's. walk is the latest walk
	// (nil until one starts), stopWalk cancels it, and walkClosed says
	// Close has begun: no walk starts after it.
	walkLeft   bool
	walkMu     sync.Mutex
	walk       *walk
	stopWalk   context.CancelFunc
	walkClosed bool

	// older is the schema Open found and, under KeepSchema, left as an
	// older recall wrote it (nil when the database is at this binary's).
	older *schemaState
	// known is this binary's schema version, which writes check the
	// file's against (see writeTx).
	known int

	// The sweep locks this handle holds, by the mark of the context they
	// were taken with, for the writes made under it (checkVaultLock).
	locksMu sync.Mutex
	locks   map[*recall.VaultLockMark]bool
}

var _ recall.Store = (*DB)(nil)

// Open opens or creates the database at path, creating parent directories,
// checks it for damage as opts.Check says (refusing a corrupt file with
// ErrCorrupt; see check and CheckMode) and brings its schema up to date.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, recall.Errorf(recall.EINVALID, "database path is empty")
	}
	opts.defaults()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := checkKind(abs); err != nil {
		return nil, err
	}
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	db := &DB{path: abs, opts: opts, known: len(ms)}
	if err := db.checkForeign(ctx); err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("open %s read-only: %w", abs, err)
		}
		if err := db.checkFirst(ctx); err != nil {
			return nil, err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return nil, fmt.Errorf("open %s: %w", abs, err)
		}
		if err := createPrivate(abs); err != nil {
			return nil, fmt.Errorf("open %s: %w", abs, err)
		}
		matchLogModes(abs)
		// The file is checked through a read-only connection before the
		// writer opens it: a writer that closes finds itself the last
		// connection and folds the write-ahead log into the file, then
		// deletes it, and a corrupt database must be refused as it is.
		if err := db.checkFirst(ctx); err != nil {
			return nil, err
		}
	}
	if opts.KeepSchema {
		if err := db.keepOlder(ctx); err != nil {
			return nil, err
		}
		if db.older != nil {
			opts.ReadOnly, db.opts.ReadOnly = true, true
		}
	}

	if !opts.ReadOnly {
		db.rw, err = sql.Open("sqlite", db.dsn(true))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", abs, err)
		}
		db.rw.SetMaxOpenConns(1)
		db.rw.SetMaxIdleConns(1)
		db.rw.SetConnMaxIdleTime(0)
		db.rw.SetConnMaxLifetime(0)
		// A store that checked only the schema (walkLeft), and found it
		// current, has nothing to migrate and opens no write connection
		// until it writes: closing last, that connection would fold a
		// log into a file not yet checked (see noFold).
		if !db.walkLeft {
			err := migrate(ctx, db.rw, upgradeTeller(opts))
			if err == nil {
				// From here on the writer waits for the write lock itself
				// (see begin, which sets this again): SQLite's own wait
				// polls ever more slowly, up to every 100 ms, and kept
				// missing the moments between another process's
				// back-to-back transactions.
				_, err = db.rw.ExecContext(ctx, `PRAGMA busy_timeout = 0`)
			}
			if err != nil {
				db.rw.Close()
				return nil, db.openErr(err)
			}
		}
		if db.ckpt, err = startCheckpointer(db.dsn(true)); err != nil {
			db.rw.Close()
			return nil, fmt.Errorf("open %s: %w", abs, err)
		}
	}

	db.ro, err = sql.Open("sqlite", db.dsn(false))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	db.ro.SetMaxOpenConns(opts.Readers)
	db.ro.SetMaxIdleConns(opts.Readers)
	if opts.ReadOnly && db.older == nil {
		if err := checkSchema(ctx, db.ro); err != nil {
			db.Close()
			return nil, db.openErr(err)
		}
	}
	if db.walkLeft && opts.Check == CheckInBackground {
		db.startWalk()
	}
	return db, nil
}

// keepOlder reads the schema of a database that exists, for KeepSchema,
// and records it in older when an older recall wrote it; a newer one is
// refused.
func (db *DB) keepOlder(ctx context.Context) error {
	if fi, err := os.Stat(db.path); err != nil || fi.Size() == 0 {
		return nil // new: nothing to keep
	}
	ro, err := db.checkConn()
	if err != nil {
		return err
	}
	defer ro.Close()
	s, err := readSchema(ctx, ro)
	if err != nil {
		return fmt.Errorf("open %s: %w", db.path, err)
	}
	if s.older() {
		db.older = &s
	}
	return nil
}

// OlderSchema reports whether Open left the database at an older recall's
// schema (KeepSchema), and which ("version 5 of 7").
func (db *DB) OlderSchema() (schema string, older bool) {
	if db.older == nil {
		return "", false
	}
	return db.older.String(), true
}

// UpgradeInterrupted reports whether the older schema Open left the
// database at (OlderSchema) is where an upgrade that stopped part-way left
// it, a first Open's included, rather than an older recall's
// (schemaState.Interrupted): the next command that writes completes it.
func (db *DB) UpgradeInterrupted() bool {
	return db.older != nil && db.older.Interrupted()
}

// dsn builds the connection string. The path goes into a file: URI with the
// characters URIs give meaning to escaped, so no file name can smuggle in a
// parameter.
//
// A store opened read-only reads through the same connections as any
// other, which SQLite's query_only keeps from writing, rather than ones
// opened with mode=ro: a connection that cannot write cannot delete the
// write-ahead log and its index (-wal, -shm) when it is the last to close,
// and a dry run left them beside the database. Closing last, a reader
// folds into the file whatever the log holds (commits of a process that
// stopped without doing so), which changes no data; a damaged file is
// refused before any such connection opens (checkFirst). The exception is
// a store that has not walked the file, beside a log that holds commits
// (noFold): its readers are mode=ro, and leave the log, and an -shm, as
// they find them.
func (db *DB) dsn(writer bool) string {
	if writer {
		return db.dsnMode("writer")
	}
	return db.dsnMode("reader")
}

// dsnMode builds the connection string of a writer, a reader of the pool,
// or a connection that cannot write at all ("mode=ro").
func (db *DB) dsnMode(mode string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	q := []string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", db.opts.BusyTimeout.Milliseconds()),
		"_pragma=foreign_keys(1)",
		fmt.Sprintf("_pragma=cache_size(-%d)", db.opts.CacheMiB*1024),
		"_pragma=temp_store(MEMORY)",
	}
	switch mode {
	case "writer":
		// Pages are SQLite's default 4 KiB, as in the databases behind
		// BENCHMARKS.md's figures (the load test's and the development
		// set's, checked). A page_size pragma here would do nothing: the
		// driver runs _pragma settings in lexical order, journal_mode(WAL)
		// first, and WAL fixes the page size.
		//
		// Checkpoints run on their own connection (see checkpointer); the
		// log a large write leaves is cut back to 64 MiB when it restarts.
		//
		// synchronous=FULL syncs the log at every commit. NORMAL would
		// leave the last commits to the operating system, to be lost with
		// the power: a memory saved and acknowledged must not be. It costs
		// 0.25 ms a small write and 3% of a sweep's batched writes here
		// (BENCHMARKS.md). On macOS a sync is fsync, which hands the data
		// to the drive but leaves it in the drive's cache, to be lost with
		// the power (Apple's fsync(2)); fullfsync makes every sync of the
		// log and of checkpoints (the checkpointer connects as the writer)
		// F_FULLFSYNC, which empties that cache. Other systems have no
		// such sync, and SQLite ignores the setting there.
		q = append(q, "_pragma=synchronous(FULL)", "_pragma=fullfsync(1)",
			"_pragma=journal_mode(WAL)", "_txlock=immediate",
			"_pragma=wal_autocheckpoint(0)", "_pragma=journal_size_limit(67108864)")
	case "mode=ro":
		q = append(q, "mode=ro")
	default:
		// Readers map the database file instead of reading it page by page
		// with pread: a full-text search over 100k chunks touches thousands
		// of pages, and the system calls were a fifth of its time.
		q = append(q, "_pragma=mmap_size(2147418112)")
		if db.noFold {
			q = append(q, "mode=ro")
		} else {
			q = append(q, "_pragma=query_only(1)")
		}
		if db.opts.Check != CheckAtOpen {
			q = append(q, "_pragma=cell_size_check(1)")
		}
	}
	return "file:" + esc.Replace(db.path) + "?" + strings.Join(q, "&")
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Ping reads the schema's version from the file's header on a read
// connection: the file is there and readable.
func (db *DB) Ping(ctx context.Context) error {
	var v int64
	return db.fail(ctx, db.ro.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&v), "ping")
}

// Close closes every connection. SQLite folds the write-ahead log into the
// file when the last connection that may write closes; mode=ro readers
// (noFold) leave it as it is.
func (db *DB) Close() error {
	db.walkMu.Lock()
	db.walkClosed = true // no walk starts from here on
	w := db.walk
	if w != nil {
		db.stopWalk()
	}
	db.walkMu.Unlock()
	if w != nil {
		<-w.done
	}
	if db.noFold && w != nil && w.err == nil && db.rw != nil {
		// The walk passed: the log a crash left may be folded into the
		// file now, by the writer, closing last (readers are mode=ro).
		// Else a server that only read would leave it for every later
		// open to read beside.
		db.rw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	}
	var errs []error
	db.stmtMu.Lock()
	for _, st := range db.stmts {
		errs = append(errs, st.Close())
	}
	db.stmts = nil
	db.stmtMu.Unlock()
	if db.ckpt != nil {
		errs = append(errs, db.ckpt.close())
	}
	db.watchMu.Lock()
	errs = append(errs, db.watch.close())
	db.watch = watcher{closed: true}
	db.watchMu.Unlock()
	if db.ro != nil {
		errs = append(errs, db.ro.Close())
	}
	if db.rw != nil {
		errs = append(errs, db.rw.Close())
	}
	return errors.Join(errs...)
}

// readStmt returns the read pool's prepared statement for query, preparing
// it on first use. Searches run the same few statements over and over, and
// preparing one costs SQLite a parse and a plan, for FTS5 queries about as
// much as running a small one.
func (db *DB) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	db.stmtMu.Lock()
	defer db.stmtMu.Unlock()
	if st, ok := db.stmts[query]; ok {
		return st, nil
	}
	st, err := db.ro.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if db.stmts == nil {
		db.stmts = map[string]*sql.Stmt{}
	}
	db.stmts[query] = st
	return st, nil
}

// fail wraps a database error with what was being done, reporting the
// caller's cancellation as such (the driver reports it as an interrupt) and
// passing recall errors through unchanged.
func (db *DB) fail(ctx context.Context, err error, what string, args ...any) error {
	if err == nil {
		return nil
	}
	var re *recall.Error
	if errors.As(err, &re) {
		return err
	}
	if what != "" {
		what = fmt.Sprintf(what, args...) + ": "
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s%w", what, cerr)
	}
	if isCorrupt(err) {
		return damaged(fmt.Errorf("%s%s: %w: %v", what, db.path, ErrCorrupt, err))
	}
	// No path in these: the message may reach a remote client.
	switch {
	case diskFull(err):
		return recall.Errorf(recall.EUNAVAILABLE, "%sthe disk holding the database is full: nothing of this write was stored; free some space and retry", what)
	case readOnlyFile(err):
		return recall.Errorf(recall.EFORBIDDEN, "%s"+readOnlyAdvice, what)
	}
	return fmt.Errorf("%s%w", what, err)
}

const readOnlyAdvice = "the database file may not be written (its permissions, or a file system mounted read-only, let recall only read it): nothing was changed"

// diskFull reports whether err is SQLite's of a disk with no room left:
// for the pages of a write, or (SQLITE_IOERR_SHMSIZE) for the few
// kilobytes of the -shm index that any connection, even one that only
// reads, maps beside the file of a database in WAL mode.
func diskFull(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_FULL || extendedCode(err) == sqlite3.SQLITE_IOERR_SHMSIZE
}

// readOnlyFile reports whether err is SQLite's refusal to write a file it
// could only open for reading. SQLITE_READONLY_ROLLBACK is not: it is a
// read-only connection meeting a transaction to roll back (checkFirst).
func readOnlyFile(err error) bool {
	return sqliteCode(err) == sqlite3.SQLITE_READONLY && extendedCode(err) != sqlite3.SQLITE_READONLY_ROLLBACK
}

// writeTx runs fn in one IMMEDIATE transaction on the write connection and
// commits it, or rolls everything back if fn or the commit fails.
func (db *DB) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if db.rw == nil {
		return ErrReadOnly
	}
	// A write goes on only once the whole file has been checked and found
	// sound (at once, unless Open left the walk for later).
	if err := db.FileChecked(ctx); err != nil {
		return err
	}
	if fi, err := os.Stat(db.path + "-wal"); err == nil && fi.Size() > walRestartBytes {
		// SQLite starts the log over only when a writer begins after a
		// checkpoint has copied all of it; back-to-back writes (a sweep,
		// /ingest) always begin while the background checkpoint copies,
		// so the log grew for as long as they lasted (0.5 GB for 100 MB
		// of text). Between two transactions the writer finishes the copy
		// itself and truncates the log. A busy reader makes it fail; the
		// next write tries again.
		// It waits up to a second for readers on older snapshots (the
		// connection's own busy timeout is 0: see begin).
		db.rw.ExecContext(ctx, `PRAGMA busy_timeout = 1000`)
		db.rw.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
		db.rw.ExecContext(ctx, `PRAGMA busy_timeout = 0`)
	}
	tx, err := db.begin(ctx)
	if err != nil {
		return db.fail(ctx, err, "begin")
	}
	// Rolls back when fn panics (a no-op after Commit): the one write
	// connection must not stay inside an open transaction.
	defer tx.Rollback()
	// A newer recall may have upgraded the file since Open (a server left
	// running across an upgrade): this binary would go on writing by its
	// own schema's rules, and the newer one's checks would not see what
	// they broke.
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&version); err != nil {
		return db.fail(ctx, err, "read schema_migrations")
	}
	if version > db.known {
		return store.UpgradedSince(version, db.known)
	}
	if err := fn(tx); err != nil {
		return db.fail(ctx, err, "")
	}
	if err := db.checkVaultLock(ctx); err != nil {
		return err
	}
	if hook := recall.CommitHook(ctx); hook != nil {
		hook()
	}
	if err := tx.Commit(); err != nil {
		return db.fail(ctx, err, "commit")
	}
	db.gen.Add(1)
	db.ckpt.notify()
	return nil
}

// begin starts an IMMEDIATE transaction on the write connection, trying
// again every millisecond or two while another process holds the write
// lock, for up to Options.BusyTimeout. Polling this often finds the gap
// between two transactions of a process writing back to back (a sweep),
// which SQLite's own busy handler, backing off to 100 ms, mostly missed:
// a small write waited seconds, past the timeout at worst
// (BenchmarkOtherProcessWrite).
func (db *DB) begin(ctx context.Context) (*sql.Tx, error) {
	deadline := time.Now().Add(db.opts.BusyTimeout)
	wait := 250 * time.Microsecond
	// database/sql replaces a connection a canceled statement left unusable
	// with a new one, opened with the DSN's busy timeout: set it again.
	if _, err := db.rw.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		return nil, err
	}
	for {
		tx, err := db.rw.BeginTx(ctx, nil)
		if err == nil || sqliteCode(err) != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return tx, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Millisecond)
	}
}

// sqliteHeader begins every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// checkKind refuses a path that cannot be a database before SQLite opens
// it: a directory, which SQLite reports as a disk I/O error, and a file
// that holds something else (a mistyped --db naming an export, say), which
// SQLite reports as damage, telling its owner to restore a backup of a file
// that never was a database. A missing or empty file is a new database;
// damage after the header is SQLite's to find.
func checkKind(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("open %s: %w", path, err)
	case fi.IsDir():
		return recall.Errorf(recall.EINVALID, "%s is a directory, not a database file (pass the path of a file, e.g. %s)",
			path, filepath.Join(path, "recall.db"))
	case fi.Size() == 0:
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if string(head) != sqliteHeader {
		return recall.Errorf(recall.EINVALID, "%s is not a SQLite database (not a recall database): check the path; the file was left as it is", path)
	}
	return nil
}

// checkForeign refuses, before anything opens it to write (the writer's
// first pragma turns on the log, which rewrites the header), an existing
// SQLite file of another application (foreignSchema). Any other trouble
// reading its schema is left to the open that follows, which says what it
// is.
func (db *DB) checkForeign(ctx context.Context) error {
	if fi, err := os.Stat(db.path); err != nil || fi.Size() == 0 {
		return nil
	}
	c, err := sql.Open("sqlite", db.dsnMode("mode=ro"))
	if err != nil {
		return nil
	}
	defer c.Close()
	if err := foreignSchema(ctx, c); recall.ErrorCode(err) == recall.EINVALID {
		return fmt.Errorf("open %s: %w", db.path, err)
	}
	return nil
}

// matchLogModes gives the write-ahead log and its index (-wal, -shm) the
// database file's mode when they lack a write permission it has (see
// matchMode). SQLite creates them with the file's mode, so a command run
// while the file was read-only left them read-only, and once its owner
// made the file writable again every write was still refused, saying the
// database file may not be written.
func matchLogModes(path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	for _, sfx := range []string{"-wal", "-shm"} {
		matchMode(path+sfx, fi.Mode().Perm())
	}
}

// matchMode gives file, a regular file beside the database made with the
// database file's mode, that mode (want) again when it lacks a write
// permission the database file has now. Only a process allowed to change
// the file's mode (its owner) does; a failure is left to whatever opens
// the file next to report.
func matchMode(file string, want os.FileMode) {
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	if want&0o222&^fi.Mode().Perm() != 0 {
		os.Chmod(file, want)
	}
}

// createPrivate creates the database file readable by its owner only, when
// it does not exist yet: it holds memories and conversations, and SQLite
// would create it (and its -wal and -shm files, which copy the database
// file's mode) with the process's umask, often readable by everyone.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}
