// Package postgres is recall's PostgreSQL store: sources, chunks, a
// full-text index, vector spaces and pgvector vectors, and the sweep log in
// one PostgreSQL database, for several recall processes (or machines)
// sharing one store. It implements recall.Store and passes the same
// contract suite (storetest) as the embedded SQLite store.
//
// Writes are serialised. Every write transaction (READ COMMITTED, whatever
// the database's default, so that it sees what the writer before it
// committed) first takes one transaction-level advisory lock (writerLock),
// as SQLite has one writer.
// Chunk ids, drawn from the chunks' identity sequence inside the lock, then
// commit in ascending order, so a process following the store by Census
// (count and largest chunk id; search.Engine.Follow) can never miss a chunk
// whose id committed below one it has already seen, which a sequence
// shared by concurrent transactions would allow. The same lock makes
// Update's read-modify-write safe even for an id that does not exist yet
// (no per-id lock is needed beside it), and lets the counters row be
// updated without retries. Reads never take it: they see committed data
// (READ COMMITTED; Export and Stats one REPEATABLE READ snapshot each).
//
// Census reads a counters row (chunks, largest chunk id) and per-space
// vector counters that every write transaction keeps, so polling it costs
// one small statement however large the store.
//
// The full-text index is a postings table, (term, chunk) -> weighted term
// frequency and positions, filled in Go with exactly the terms the SQLite
// store gives FTS5 (textindex: folding, CJK bigrams, Porter stems, the
// title column with the date written out), with document frequencies kept
// in a terms table; a term too long for a B-tree entry is held by a key of
// fixed length (termKey). Lexical plans a query as the SQLite store does and
// ranks by FTS5's bm25() formula (k1 1.2, b 0.75, title weight 2, body 1),
// computed in Go over the candidates' postings, so both stores return the
// same candidates with the same scores (TestRankingAgreesWithSQLite). See
// Lexical for where it estimates instead.
//
// Vectors are stored one pgvector row per unit of a text's vector
// (recall.Vector concatenates a text's units), keyed by space and text
// hash, so no row passes pgvector's 16,000-dimension limit. They are read
// in pgvector's binary format, a text's units aggregated into one value
// (decodeUnits); ScanChunks and ScanVectors, which a server's start-up
// load reads everything through, read pages of chunks by id a page ahead
// of their caller (scanPages).
//
// Differences from the SQLite store a user could notice: text holding a
// NUL character or invalid UTF-8 is refused (EINVALID), as PostgreSQL's
// text type cannot hold it (an id, prefix, owner or category holding one
// finds nothing, as on SQLite, but so does a source prefix cut inside a
// character, which SQLite compares byte by byte); a space cannot have more than 16,000
// dimensions; ScanChunks and ScanVectors read pages by chunk id rather than
// one snapshot; bulk writes (a sweep) are several times slower, the server
// doing the index maintenance of every posting (BenchmarkWrite).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// Options tune how a store is opened. The zero value is a good default.
type Options struct {
	// MaxConns is the size of the connection pool (default 8). A write
	// holds one connection for its transaction; searches use the others.
	MaxConns int
	// LexicalBudget is about how many matching chunks a full-text query
	// may rank before its most common words stop selecting candidates and
	// only add to the ranking (default 2000); no query ranks more than
	// twice as many. As in the SQLite store (see Lexical).
	LexicalBudget int
	// ReadOnly opens the store for reading only (recall sweep --dry-run):
	// every transaction is read-only, so no write can reach the database,
	// and the schema is not migrated: a database recall has not set up, or
	// one an older binary set up, is refused.
	ReadOnly bool
	// LockTimeout bounds how long a write waits for another process's
	// write to finish (default 10 s, SQLite's busy timeout); past it the
	// write fails with EUNAVAILABLE.
	LockTimeout time.Duration
	// Existing refuses (ENOTFOUND) a database recall has not set up
	// instead of creating its tables, for commands that only read: a
	// mistyped database name is not answered "no results".
	Existing bool
	// Upgrading, when set, is called before Open upgrades the schema of a
	// database an older recall set up, with its version and this
	// binary's: older versions cannot use it afterwards, so a command
	// says so.
	Upgrading func(from, to int)
	// KeepSchema leaves a database an older recall set up at its schema
	// version: Open does not upgrade it, and every write fails, for
	// commands that read the whole database whatever its version (recall
	// check), as the SQLite store's KeepSchema. Only IntegrityCheck is
	// meant for such a store; OlderSchema says whether Open left it so.
	KeepSchema bool
}

func (o *Options) defaults() {
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.LexicalBudget <= 0 {
		o.LexicalBudget = 2000
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = 10 * time.Second
	}
}

// DB is a recall store in one PostgreSQL database. It is safe for
// concurrent use, by several processes too.
type DB struct {
	pool *pgxpool.Pool
	opts Options
	// where names the server and database for error messages, without
	// credentials.
	where string
	// known is this binary's schema version, which writes check the
	// database's against (see writeTx).
	known int
	// older is the schema version Open found and, under KeepSchema, left
	// as an older recall set it up (0 when the database is at known).
	older int

	// The sweep locks this handle holds, by the mark of the context they
	// were taken with, for the writes made under it (checkVaultLock).
	locksMu sync.Mutex
	locks   map[*recall.VaultLockMark]heldLock
}

var _ recall.Store = (*DB)(nil)

// writerLock is the advisory lock key every write transaction holds (see
// the package doc); migrateLock the one migrations hold. Both are
// transaction-level: they go with the commit or rollback.
const (
	writerLock  int64 = 0x7265_6361_6c6c_0001 // "recall" 1
	migrateLock int64 = 0x7265_6361_6c6c_0002
)

// CheckDSN reports, without connecting, a DSN Open would refuse as
// malformed (code EINVALID, the password never shown), so that a caller
// can tell a mistake in the setting from a database that cannot be
// reached.
func CheckDSN(dsn string) error {
	_, err := parseDSN(dsn)
	return err
}

func parseDSN(dsn string) (*pgxpool.Config, error) {
	if ambiguous(dsn) {
		return nil, recall.Errorf(recall.EINVALID, "invalid postgres DSN: the URL holds more than one @; percent-encode an @ in the user name or password as %%40")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the DSN with its password masked; redact masks it
		// again in case a form slips through.
		return nil, recall.Errorf(recall.EINVALID, "invalid postgres DSN: %s", redact(err.Error(), dsn, ""))
	}
	return cfg, nil
}

// Open connects to the database named by dsn (a postgres:// URL or
// key=value string) and brings its schema up to date. The password, if the
// DSN holds one, never appears in an error.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	opts.defaults()
	cfg, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	// Named as pgx reads the DSN, which is what it connects to: a
	// malformed URL (an unescaped @ in the password) reads differently
	// to other parsers.
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	cfg.MaxConns = int32(opts.MaxConns)
	// Every connection is pinged as it leaves the pool, not only one idle
	// for over a second (pgxpool's default): a connection the server ended
	// while it sat in the pool (pg_terminate_backend, a pooler or firewall
	// dropping idle connections, a restart) is then replaced before a
	// statement is sent on it, where it would fail one request each. A
	// retry of the failed operation could not be as simple: a write whose
	// COMMIT may have reached the server must not run twice. The ping is a
	// round trip per operation (BENCHMARKS.md, "Pinging pooled
	// connections").
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
	if opts.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectErr(ctx, where, err, dsn, cfg.ConnConfig.Password)
	}
	ms, err := migrations()
	if err != nil {
		pool.Close()
		return nil, err
	}
	db := &DB{pool: pool, opts: opts, where: where, known: len(ms), locks: map[*recall.VaultLockMark]heldLock{}}
	check := func(ctx context.Context, pool *pgxpool.Pool) error {
		return migrate(ctx, pool, opts.Existing, opts.Upgrading)
	}
	switch {
	case opts.ReadOnly:
		check = checkSchema
	case opts.KeepSchema:
		check = func(ctx context.Context, pool *pgxpool.Pool) error {
			ms, set, applied, err := schemaState(ctx, pool)
			if err != nil {
				return err
			}
			if set && len(applied) > 0 && len(applied) < len(ms) {
				db.older = applied[len(applied)-1]
				return nil
			}
			return migrate(ctx, pool, opts.Existing, opts.Upgrading)
		}
	}
	if err := check(ctx, pool); err != nil {
		pool.Close()
		if errors.Is(err, ErrNewerSchema) {
			return nil, fmt.Errorf("open postgres %s: %w", where, err)
		}
		// The first connection is made here: its failure is a connection
		// error, which may quote the DSN.
		return nil, connectErr(ctx, where, err, dsn, cfg.ConnConfig.Password)
	}
	return db, nil
}

// OlderSchema reports whether Open left the database at an older recall's
// schema (KeepSchema), and which ("version 2 of 3").
func (db *DB) OlderSchema() (schema string, older bool) {
	if db.older == 0 {
		return "", false
	}
	return fmt.Sprintf("version %d of %d", db.older, db.known), true
}

// connectErr reports a failure to reach or prepare the database without
// the DSN's password: the message is rebuilt from the error's text with
// every occurrence of the password replaced, and does not wrap the
// original (whose text could hold it), except for cancellation.
func connectErr(ctx context.Context, where string, err error, dsn, password string) error {
	var re *recall.Error
	if errors.As(err, &re) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("open postgres %s: %w", where, cerr)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// pgx's message is a chain over several lines, one per address
		// tried ("failed to connect to `user=u database=x`:\n\t127.0.0.1:1
		// (127.0.0.1): dial error: dial tcp 127.0.0.1:1: connect:
		// connection refused", twice for localhost): the reasons it ends
		// in say what is wrong, each once.
		var why []string
		for _, r := range causes(err, nil) {
			if r = redact(r, dsn, password); !slices.Contains(why, r) {
				why = append(why, r)
			}
		}
		return recall.WrapError(recall.EUNAVAILABLE, errors.New(strings.Join(why, "; ")), "cannot connect to PostgreSQL at %s", where)
	}
	msg := redact(err.Error(), dsn, password)
	return recall.WrapError(recall.EUNAVAILABLE, errors.New(msg), "open postgres %s", where)
}

// causes appends the messages of the errors err's chain ends in (those
// that wrap none): "connection refused", not the dial, the address and
// the call above it.
func causes(err error, out []string) []string {
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = causes(e, out)
		}
		return out
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return causes(e, out)
		}
	}
	return append(out, err.Error())
}

// ambiguous reports a URL DSN with more than one @: parsers split it at
// different ones, and the part of a password past the first would be read
// as the host, and printed as such.
func ambiguous(dsn string) bool {
	l := strings.ToLower(dsn)
	return (strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")) && strings.Count(dsn, "@") > 1
}

// Describe names the database a DSN connects to, for people to read:
// postgres://user@host:port/database, never the password.
func Describe(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil || ambiguous(dsn) {
		return "a PostgreSQL connection string recall cannot parse"
	}
	u := url.URL{Scheme: "postgres", Host: fmt.Sprintf("%s:%d", cfg.Host, cfg.Port), Path: "/" + cfg.Database}
	if cfg.User != "" {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

// redact removes the DSN, the password pgx read from it (when known) and
// any key=value password from a message.
func redact(msg, dsn, password string) string {
	if dsn != "" {
		msg = strings.ReplaceAll(msg, dsn, "<dsn>")
	}
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
		if esc := url.QueryEscape(password); esc != password {
			msg = strings.ReplaceAll(msg, esc, "xxxxx")
		}
	}
	for _, key := range []string{"password=", "password = "} {
		for {
			i := strings.Index(msg, key)
			if i < 0 || strings.HasPrefix(msg[i+len(key):], "xxxxx") {
				break
			}
			end := i + len(key)
			for end < len(msg) && msg[end] != ' ' {
				end++
			}
			msg = msg[:i+len(key)] + "xxxxx" + msg[end:]
		}
	}
	return msg
}

// Ping runs an empty statement on a connection of the pool (one it
// connects if none is left, pinged as every connection leaving the pool
// is).
func (db *DB) Ping(ctx context.Context) error {
	return db.fail(ctx, db.pool.Ping(ctx), "ping")
}

// Close closes the connection pool.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// fail wraps a database error with what was being done, reporting the
// caller's cancellation as such and passing recall errors through.
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
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "42501": // insufficient_privilege: a role granted only SELECT, say
			return recall.WrapError(recall.EFORBIDDEN, err, "%sthe database role recall connects as may not do this (a role granted only SELECT can only read): nothing was changed", what)
		case pe.Code == "25006": // read_only_sql_transaction: a hot standby, or default_transaction_read_only
			return recall.WrapError(recall.EFORBIDDEN, err, "%sthe database only reads here (a standby server, or default_transaction_read_only set for this role or database): nothing was changed", what)
		case pe.Code == "53100": // disk_full
			return recall.Errorf(recall.EUNAVAILABLE, "%sthe disk holding the database is full: nothing of this write was stored; free some space and retry", what)
		case pe.Code == "57014": // query_canceled, not by the caller: statement_timeout
			return recall.WrapError(recall.EUNAVAILABLE, err, "%sa statement ran longer than the database's statement_timeout allows: retry, or raise it for recall's role", what)
		case pe.Code == "55P03": // lock_not_available: lock_timeout
			return recall.WrapError(recall.EUNAVAILABLE, err, "%sanother session (maintenance such as VACUUM FULL or REINDEX?) held a table locked longer than lock_timeout: nothing was changed; retry", what)
		case pe.Code == "53300": // too_many_connections
			return recall.WrapError(recall.EUNAVAILABLE, err, "%sthe database server has no connection free (max_connections, or the role's or database's connection limit): retry later", what)
		case pe.Code == "22021" || pe.Code == "22P05": // bad UTF-8, or NUL, in text
			return recall.WrapError(recall.EINVALID, err, "%stext PostgreSQL cannot store", what)
		case pe.Code == "54000": // program_limit_exceeded: a value too large for an index entry, say
			return recall.WrapError(recall.EINVALID, err, "%sa value is larger than PostgreSQL can hold here (%s)", what, pe.Message)
		case pe.Code == "XX001" || pe.Code == "XX002": // data_corrupted, index_corrupted
			return recall.WrapError(recall.EDAMAGED, err, "%sthe database is damaged: restore a backup (or REINDEX a damaged index)", what)
		}
	}
	if unreachable(err) {
		return recall.WrapError(recall.EUNAVAILABLE, err, "%sthe database is not reachable", what)
	}
	return fmt.Errorf("%s%w", what, err)
}

// unreachable reports an error of the connection rather than of the
// statement: the server cannot be reached, went away or is shutting down
// (a restart, a failover). The caller may retry later; it is not a bug.
func unreachable(err error) bool {
	// A failure to connect, whatever the server answered (it may be out of
	// slots, starting or shutting down), before the server's codes.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// connection_exception, admin/crash shutdown, cannot connect now.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxClosed) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// errKeptOlder refuses a write to a database Open left at an older schema
// (KeepSchema): this binary writes by its own schema's rules.
var errKeptOlder = recall.Errorf(recall.EINVALID, "the store is open read-only: its schema was left as an older recall set it up")

// writeTx runs fn in one transaction that holds the writer lock and
// commits it, or rolls everything back if fn or the commit fails. The
// context's commit hook runs once, right before the commit.
func (db *DB) writeTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if db.older != 0 {
		return errKeptOlder
	}
	// READ COMMITTED whatever the database's default: each statement then
	// sees what the writer before committed, where a snapshot taken at the
	// first statement, before the writer lock was granted, would not.
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return db.fail(ctx, err, "begin")
	}
	// A no-op after Commit; after a failure or a panic it ends the
	// transaction and returns the connection clean.
	defer tx.Rollback(context.WithoutCancel(ctx))
	// A writer waits for another at most LockTimeout, as SQLite's writers
	// wait out a busy timeout: a holder that is stuck (a frozen client, a
	// half-open connection) fails the write with a message, never hangs it.
	// A statement_timeout set for the database or role does not cut that
	// wait shorter; it applies again to the write's statements.
	//
	// A newer recall may have upgraded the schema since Open (servers
	// upgraded one at a time): this one would go on writing by its own
	// schema's rules. Read under the writer lock, so a migration that
	// committed before it was granted is seen.
	//
	// The four statements go in one round trip: the server runs them in
	// order, each with the settings the one before made, and skips the
	// rest after an error.
	var b pgx.Batch
	b.Queue(`SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', '0', true)`,
		strconv.FormatInt(db.opts.LockTimeout.Milliseconds(), 10))
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, writerLock)
	b.Queue(`SET LOCAL statement_timeout TO DEFAULT`)
	b.Queue(`SELECT coalesce(max(version), 0) FROM ` + migrationsTable)
	br := tx.SendBatch(ctx, &b)
	var version int
	err = func() error {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return db.fail(ctx, err, "begin")
		}
		if _, err := br.Exec(); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
				return recall.Errorf(recall.EUNAVAILABLE, "another writer has held the database's write lock for over %s: nothing was written; retry", db.opts.LockTimeout)
			}
			return db.fail(ctx, err, "wait for the writer lock")
		}
		if _, err := br.Exec(); err != nil {
			return db.fail(ctx, err, "begin")
		}
		if err := br.QueryRow().Scan(&version); err != nil {
			return db.fail(ctx, err, "read "+migrationsTable)
		}
		return db.fail(ctx, br.Close(), "begin")
	}()
	if err != nil {
		return err
	}
	if version > db.known {
		return store.UpgradedSince(version, db.known)
	}
	if err := fn(tx); err != nil {
		return db.fail(ctx, err, "")
	}
	if err := db.checkVaultLock(ctx, tx); err != nil {
		return db.fail(ctx, err, "")
	}
	if hook := recall.CommitHook(ctx); hook != nil {
		hook()
	}
	if err := tx.Commit(ctx); err != nil {
		return db.fail(ctx, err, "commit")
	}
	return nil
}
