package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNewerSchema is wrapped when the database records a migration this
// binary does not know (store.ErrNewerSchema).
var ErrNewerSchema = store.ErrNewerSchema

type migration = store.Migration

// migrations returns the embedded migrations in order.
func migrations() ([]migration, error) { return store.Migrations(migrationFiles) }

// migrationsTable records the schema versions applied. Its name is
// recall's own: other tools keep a schema_migrations table of a different
// shape, and a database shared with one must not be read as recall's.
const migrationsTable = "recall_schema_migrations"

// migrate applies the migrations the database lacks, all in one
// transaction together with their rows in migrationsTable, so the schema
// is always at a recorded version. A database already at this binary's
// version is only read (no lock, no DDL), so a role that may only read can
// open it. Otherwise the transaction first takes an advisory lock: of two
// processes opening a fresh database at once, the second waits, then
// finds every migration applied. With existing, a database recall has not
// set up is refused (ENOTFOUND) instead.
//
// upgrading, when not nil, is told first when a database recall has set up
// is to be upgraded (see Options.Upgrading).
func migrate(ctx context.Context, pool *pgxpool.Pool, existing bool, upgrading func(from, to int)) error {
	ms, set, applied, err := schemaState(ctx, pool)
	switch {
	case err != nil:
		return err
	case set && len(applied) == len(ms):
		return nil
	case !set && existing:
		return errNoSchema
	}
	// READ COMMITTED, as writes (see writeTx): what is read again under
	// the lock must be what the holder before committed.
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL)`); err != nil {
		return fmt.Errorf("create %s: %w", migrationsTable, err)
	}
	// Read again under the lock: another process may have migrated meanwhile.
	if applied, err = knownVersions(ctx, tx, len(ms)); err != nil {
		return err
	}
	if len(applied) < len(ms) {
		if len(applied) > 0 && upgrading != nil {
			upgrading(applied[len(applied)-1], len(ms))
		}
		// Writes wait for the upgrade, and the upgrade for the write in
		// progress: a write of an older recall's server checks the schema
		// version under the writer lock (writeTx), and would otherwise
		// find the old version while this transaction is uncommitted,
		// then write by the old rules once it commits.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, writerLock); err != nil {
			return err
		}
		if err := createVector(ctx, tx); err != nil {
			return err
		}
	}
	for _, m := range ms {
		if slices.Contains(applied, m.Version) {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+migrationsTable+` (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.Version, m.Name, time.Now().UTC()); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// errNoSchema refuses a database recall has not set up.
var errNoSchema = recall.Errorf(recall.ENOTFOUND, "this database holds no recall data yet: sweep a vault or save a memory first, or check --db / RECALL_DB")

// checkSchema is migrate for a read-only store: it changes nothing, and
// refuses a schema that is missing, older or newer than this binary's.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	ms, set, applied, err := schemaState(ctx, pool)
	switch {
	case err != nil:
		return err
	case !set:
		return errNoSchema
	case len(applied) < len(ms):
		return recall.Errorf(recall.EINVALID, "this database's schema is older than this binary's: run a command that writes (a sweep) once to update it")
	}
	return nil
}

// schemaState returns this binary's migrations, whether recall has set the
// database up, and which schema versions it has applied, refusing
// (ErrNewerSchema) a version newer than the migrations. It only reads.
func schemaState(ctx context.Context, pool *pgxpool.Pool) (ms []migration, set bool, applied []int, err error) {
	if ms, err = migrations(); err != nil {
		return nil, false, nil, err
	}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, false, nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, migrationsTable).Scan(&set); err != nil || !set {
		return ms, false, nil, err
	}
	applied, err = knownVersions(ctx, tx, len(ms))
	return ms, true, applied, err
}

// knownVersions returns the schema versions applied to the database,
// refusing (ErrNewerSchema) one newer than the known migrations.
func knownVersions(ctx context.Context, tx pgx.Tx, known int) ([]int, error) {
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return nil, err
	}
	if len(applied) > 0 && applied[len(applied)-1] > known {
		return nil, store.NewerSchema(applied[len(applied)-1], known) // applied is in order
	}
	return applied, nil
}

// createVector installs pgvector in the database if it is not there yet.
// pgvector is not a trusted extension: a role that is not a superuser
// cannot create it, and gets told how to have it created.
func createVector(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return recall.Errorf(recall.EUNAVAILABLE, "the pgvector extension is not installed in this database and this role may not install it: "+
			"have a superuser run CREATE EXTENSION vector in it once")
	}
	if errors.As(err, &pe) && pe.Code == "0A000" || errors.As(err, &pe) && pe.Code == "58P01" {
		return recall.Errorf(recall.EUNAVAILABLE, "the PostgreSQL server does not have the pgvector extension: install pgvector 0.5 or later on it")
	}
	return err
}

func appliedVersions(ctx context.Context, tx pgx.Tx) ([]int, error) {
	rows, err := tx.Query(ctx, `SELECT version FROM `+migrationsTable+` ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", migrationsTable, err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", migrationsTable, err)
	}
	return vs, nil
}
