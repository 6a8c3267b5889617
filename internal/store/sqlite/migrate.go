package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
	"github.com/recall-mcp/recall/internal/textindex"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNewerSchema is wrapped when the database records a migration this
// binary does not know (store.ErrNewerSchema).
var ErrNewerSchema = store.ErrNewerSchema

type migration = store.Migration

// migrations returns the embedded migrations in order.
func migrations() ([]migration, error) { return store.Migrations(migrationFiles) }

// goSteps are the parts of migrations that SQL cannot do, run after the
// migration's SQL in its transaction.
var goSteps = map[int]func(ctx context.Context, tx *sql.Tx) error{
	4: rebuildFullText,
	6: rebuildFullText,
	9: keyVectors,
}

// keyVectors gives every chunk its vector key (chunks.vkey, keyV9 of its
// header and text hash) and every stored vector,
// keyed by its text's hash until now, the key of the chunks holding that
// text, so that nothing is embedded again. A vector whose chunks hold its
// text under one header is renamed in place: SQLite overwrites a row of
// the same size without rewriting the pages of its blob, so this costs a
// read of the vectors, not a copy. Each further key (the text under other
// headers, or without one as well) gets a copy.
func keyVectors(ctx context.Context, tx *sql.Tx) error {
	set, err := tx.PrepareContext(ctx, `UPDATE chunks SET vkey = ? WHERE id = ?`)
	if err != nil {
		return err
	}
	defer set.Close()
	type row struct {
		id           int64
		hash, header string
	}
	err = chunkPages(ctx, tx, `SELECT c.id, c.hash, t.header FROM chunks c JOIN chunk_texts t ON t.id = c.id
		WHERE c.id > ? ORDER BY c.id LIMIT ?`, 4096,
		func(rows *sql.Rows) (r row, id int64, err error) {
			err = rows.Scan(&r.id, &r.hash, &r.header)
			return r, r.id, err
		},
		func(batch []row) error {
			for _, r := range batch {
				if _, err := set.ExecContext(ctx, keyV9(r.header, r.hash), r.id); err != nil {
					return fmt.Errorf("key chunk %d: %w", r.id, err)
				}
			}
			return nil
		})
	if err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE INDEX chunks_vkey ON chunks (vkey)`,
		// Copies, for every key of a text but the one its vector is
		// renamed to below (the least, when no chunk holds the text
		// without a header).
		`INSERT INTO vectors (space, vkey, vec)
			SELECT v.space, k.vkey, v.vec FROM (SELECT DISTINCT hash, vkey FROM chunks WHERE vkey != hash) k
			CROSS JOIN spaces sp JOIN vectors v ON v.space = sp.name AND v.vkey = k.hash
			WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.vkey = k.hash)
				OR k.vkey != (SELECT min(c.vkey) FROM chunks c WHERE c.hash = k.hash)`,
		`UPDATE vectors SET vkey = (SELECT min(c.vkey) FROM chunks c WHERE c.hash = vectors.vkey)
			WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.vkey = vectors.vkey)
			AND EXISTS (SELECT 1 FROM chunks c WHERE c.hash = vectors.vkey)`,
		// A vector no chunk holds cannot be: none is left.
		`DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.vkey = vectors.vkey)`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// keyV9 is a chunk's vector key as schema 9 made it: its text's hash
// without a header, else the hex sha256 of the header, a NUL byte and the
// text's hash. Migration 10 makes every key recall.VectorKey's from it; a
// migration's keys stay as they were when it was written.
func keyV9(header, textHash string) string {
	if header == "" {
		return textHash
	}
	sum := sha256.Sum256([]byte(header + "\x00" + textHash))
	return hex.EncodeToString(sum[:])
}

// rebuildFullText fills an empty chunks_fts from the stored chunks, as the
// writer fills it: the title column (ftsTitle) and the index text of every
// chunk.
func rebuildFullText(ctx context.Context, tx *sql.Tx) error {
	ins, err := tx.PrepareContext(ctx, `INSERT INTO chunks_fts (rowid, title, body) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	type row struct {
		id                int64
		title, date, text string
	}
	return chunkPages(ctx, tx, `SELECT c.id, s.title, s.date, t.text FROM chunks c
		JOIN sources s ON s.sid = c.sid JOIN chunk_texts t ON t.id = c.id
		WHERE c.id > ? ORDER BY c.id LIMIT ?`, 1024,
		func(rows *sql.Rows) (r row, id int64, err error) {
			err = rows.Scan(&r.id, &r.title, &r.date, &r.text)
			return r, r.id, err
		},
		func(batch []row) error {
			texts := make([]string, len(batch))
			parallel(len(batch), func(i int) { texts[i] = textindex.IndexText(batch[i].text) })
			for i, r := range batch {
				if _, err := ins.ExecContext(ctx, r.id, ftsTitle(r.title, r.date), texts[i]); err != nil {
					return fmt.Errorf("index chunk %d: %w", r.id, err)
				}
			}
			return nil
		})
}

// chunkPages runs query, which reads chunks in id order after the id it is
// given and at most page of them, a page at a time until none is left,
// calling fn with each page's rows as scan reads them (each with its chunk
// id).
func chunkPages[T any](ctx context.Context, tx *sql.Tx, query string, page int,
	scan func(*sql.Rows) (T, int64, error), fn func([]T) error) error {
	last := int64(-1)
	for {
		rows, err := tx.QueryContext(ctx, query, last, page)
		if err != nil {
			return err
		}
		var batch []T
		for rows.Next() {
			r, id, err := scan(rows)
			if err != nil {
				rows.Close()
				return err
			}
			batch, last = append(batch, r), id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		if err := fn(batch); err != nil {
			return err
		}
	}
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

// migrate applies the migrations the database lacks, each in its own
// transaction together with its schema_migrations row, so a crash leaves
// the schema at a recorded version. Each such transaction also records, in
// the file header's user_version, the version the upgrade goes to, and the
// last one sets it back to 0 (upgradeMark): a crash between two leaves a
// file that says its upgrade was interrupted, which one at an older
// recall's version cannot be told from otherwise. The write connection begins IMMEDIATE
// transactions, so two processes opening the same file cannot both apply one.
// upgrading, when not nil, is told first when an existing database is to be
// upgraded (see Options.Upgrading).
func migrate(ctx context.Context, conn *sql.DB, upgrading func(s schemaState, to int)) error {
	if err := migrateTo(ctx, conn, -1, upgrading); err != nil {
		return err
	}
	return addChunkAttributes(ctx, conn)
}

// upgradeTeller is what migrate tells before it upgrades a database: opts'
// Upgrading, or its Resuming for an upgrade that stopped part-way; nil
// when neither is set.
func upgradeTeller(opts Options) func(s schemaState, to int) {
	if opts.Upgrading == nil && opts.Resuming == nil {
		return nil
	}
	return func(s schemaState, to int) {
		switch {
		case s.Interrupted() && opts.Resuming != nil:
			opts.Resuming(s.version, to)
		case opts.Upgrading != nil:
			opts.Upgrading(s.version, to)
		}
	}
}

// migrateTo applies the migrations up to version last (all when last < 0).
func migrateTo(ctx context.Context, conn *sql.DB, last int, upgrading func(s schemaState, to int)) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	if last >= 0 {
		ms = ms[:min(last, len(ms))]
	}
	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	if upgrading != nil {
		s, err := readSchema(ctx, conn)
		if err != nil {
			return err
		}
		if s.version > 0 && s.version < len(ms) {
			upgrading(s, len(ms))
		}
	}
	for _, m := range ms {
		err := func() error {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			applied, err := appliedVersions(ctx, tx)
			if err != nil {
				return err
			}
			if err := newerThan(applied, ms); err != nil {
				return err
			}
			if slices.Contains(applied, m.Version) {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
			}
			if step := goSteps[m.Version]; step != nil {
				if err := step(ctx, tx); err != nil {
					return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
				}
			}
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
				return err
			}
			// The upgrade in progress (upgradeMark), cleared by its last step.
			mark := ms[len(ms)-1].Version
			if m.Version == mark {
				mark = 0
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, mark)); err != nil {
				return err
			}
			return tx.Commit()
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// earlyChunks reports whether the chunks table lacks the source attributes
// (kind, owner, category, dates) 0001_init.sql gives it: the first builds
// of recall, from 30 November 2026 before 06:14, made it so, and 0001 was
// edited in place afterwards, so such a database records the same versions
// as any other. Writes and searches need the columns.
func earlyChunks(ctx context.Context, q querier) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('chunks') WHERE name = 'kind'`).Scan(&n); err != nil {
		return false, fmt.Errorf("read the chunks table's columns: %w", err)
	}
	return n == 0, nil
}

// chunkAttributes gives an early database's chunks (earlyChunks) the
// columns and index 0001_init.sql has, filled from their sources as the
// writer fills them.
const chunkAttributes = `
ALTER TABLE chunks ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN category TEXT NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN date_lo TEXT;
ALTER TABLE chunks ADD COLUMN date_hi TEXT;
UPDATE chunks SET kind = s.kind, owner = s.owner, category = s.category, date_lo = s.date_lo, date_hi = s.date_hi
	FROM sources s WHERE s.sid = chunks.sid;
CREATE INDEX chunks_personal ON chunks (owner) WHERE kind != 'archive';`

// addChunkAttributes completes an early database (earlyChunks) after its
// migrations, in one transaction; a database made by 0001 as it is now is
// only looked at.
func addChunkAttributes(ctx context.Context, conn *sql.DB) error {
	if early, err := earlyChunks(ctx, conn); err != nil || !early {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if early, err := earlyChunks(ctx, tx); err != nil || !early {
		return err // another process completed it meanwhile
	}
	if _, err := tx.ExecContext(ctx, chunkAttributes); err != nil {
		return fmt.Errorf("add their source attributes to the chunks of a database an early recall made: %w", err)
	}
	return tx.Commit()
}

// schemaState is a database's schema as a store finds it.
type schemaState struct {
	version int  // the highest schema version it records
	known   int  // the highest this binary knows
	early   bool // its chunks lack their source attributes (earlyChunks)
	// upgrading is the version an upgrade that stopped part-way was going
	// to (upgradeMark), 0 when none did.
	upgrading int
}

// upgradeMark reads the version an upgrade of the database that began and
// did not finish was going to: the user_version migrate sets in each
// migration's transaction and clears in the last one's (0: none; recall
// releases before the mark never set it).
func upgradeMark(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the schema's upgrade mark: %w", err)
	}
	return v, nil
}

// Interrupted reports whether the database is behind because an upgrade
// (its first Open, which applies every migration, included) stopped
// part-way, not because an older recall wrote it so: no recall leaves a
// file at version 0, and one whose migrations were cut short bears the
// mark of the version they were going to. The next command that writes
// completes it.
func (s schemaState) Interrupted() bool { return s.version == 0 || s.upgrading > s.version }

// older reports whether the database is behind this binary's schema, so
// that opening it for writing upgrades it.
func (s schemaState) older() bool { return s.version < s.known || s.early }

// String names the state for a message: "version 5 of 7".
func (s schemaState) String() string {
	if s.early {
		return fmt.Sprintf("version %d of %d, with chunks as the first builds of recall made them", s.version, s.known)
	}
	return fmt.Sprintf("version %d of %d", s.version, s.known)
}

// readSchema reads the database's schema state without writing, refusing
// (ErrNewerSchema) one newer than this binary's. A file without
// schema_migrations is at version 0: the first Open of a database creates
// that table first, so a file holding none is one whose first Open ended
// (a kill -9, a power cut) between writing the file's header and its first
// table (foreignSchema refuses a file with other tables).
func readSchema(ctx context.Context, q querier) (schemaState, error) {
	ms, err := migrations()
	if err != nil {
		return schemaState{}, err
	}
	var tables int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&tables); err != nil {
		return schemaState{}, fmt.Errorf("read the schema: %w", err)
	}
	if tables == 0 {
		return schemaState{known: len(ms)}, nil
	}
	applied, err := appliedVersions(ctx, q)
	if err != nil {
		return schemaState{}, err
	}
	s := schemaState{known: len(ms)}
	if len(applied) == 0 {
		return s, nil
	}
	s.version = applied[len(applied)-1]
	if err := newerThan(applied, ms); err != nil {
		return s, err
	}
	if s.upgrading, err = upgradeMark(ctx, q); err != nil {
		return s, err
	}
	s.early, err = earlyChunks(ctx, q)
	return s, err
}

// checkSchema verifies, without writing, that a database is exactly at this
// binary's schema (for read-only opens, which cannot migrate).
func checkSchema(ctx context.Context, conn *sql.DB) error {
	s, err := readSchema(ctx, conn)
	if err != nil {
		return err
	}
	if s.older() {
		return errOlderSchema(s)
	}
	return nil
}

// errOlderSchema is the error of a read-only open of a database an older
// recall wrote, or whose upgrade was interrupted.
func errOlderSchema(s schemaState) error {
	if s.Interrupted() {
		return fmt.Errorf("the database's last upgrade was interrupted (%s) and cannot be completed while opened read-only: "+
			"run a command that writes (a sweep without --dry-run) once to complete it", s)
	}
	return fmt.Errorf("the database's schema is older than this recall's (%s) and cannot be upgraded while opened read-only: "+
		"run a command that writes (a sweep without --dry-run) once to upgrade it", s)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// foreignSchema refuses the SQLite database of another application: one
// that holds tables but not recall's schema_migrations. Migrating it would
// add recall's tables beside the other's, and a read would report what is
// missing as damage. Open asks it once, before anything else reads the
// file (DB.checkForeign).
func foreignSchema(ctx context.Context, q querier) error {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return fmt.Errorf("read the schema: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		if n == "schema_migrations" {
			return nil
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil || len(names) == 0 {
		return err
	}
	shown := strings.Join(names[:min(len(names), 3)], ", ")
	if len(names) > 3 {
		shown += ", …"
	}
	return recall.Errorf(recall.EINVALID, "this SQLite database belongs to another application (its tables: %s; none of recall's): "+
		"pass the path of a recall database, or of a new file; the file was left as it is", shown)
}

func appliedVersions(ctx context.Context, q querier) ([]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, rows.Err()
}

// newerThan refuses applied versions past the known migrations, naming
// the highest (applied is in order).
func newerThan(applied []int, known []migration) error {
	if len(applied) > 0 && applied[len(applied)-1] > len(known) {
		return store.NewerSchema(applied[len(applied)-1], len(known))
	}
	return nil
}
