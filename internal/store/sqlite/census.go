package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/recall-mcp/recall"
)

// watcher answers Census from a connection of its own. PRAGMA data_version
// on a connection changes whenever any other connection, in this process
// or another, commits to the database; the watcher's connection never
// writes, so while the number stays the same the last census still holds
// and a poll costs one pragma instead of a pass over the chunks.
type watcher struct {
	db     *sql.DB
	conn   *sql.Conn // pinned: a new connection would number versions afresh
	ver    int64
	space  string
	last   recall.Census
	valid  bool
	closed bool
}

// Census summarises the chunks and the vectors of space ("" for none).
func (db *DB) Census(ctx context.Context, space string) (recall.Census, error) {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	w := &db.watch
	if w.closed {
		return recall.Census{}, recall.Errorf(recall.EUNAVAILABLE, "the store is closed")
	}
	if w.conn == nil {
		if w.db == nil {
			d, err := sql.Open("sqlite", db.dsn(false))
			if err != nil {
				return recall.Census{}, db.fail(ctx, err, "census")
			}
			d.SetMaxOpenConns(1)
			w.db = d
		}
		conn, err := w.db.Conn(ctx)
		if err != nil {
			return recall.Census{}, db.fail(ctx, err, "census")
		}
		w.conn, w.valid = conn, false
	}
	var ver int64
	if err := w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&ver); err != nil {
		w.conn.Close()
		w.conn = nil
		return recall.Census{}, db.fail(ctx, err, "census")
	}
	if w.valid && ver == w.ver && space == w.space {
		return w.last, nil
	}
	// Something committed since the last look, perhaps another process:
	// the full-text document frequencies this process caches are stale.
	db.gen.Add(1)
	c, err := census(ctx, w.conn, space)
	if err != nil {
		w.valid = false
		return recall.Census{}, db.fail(ctx, err, "census")
	}
	w.ver, w.space, w.last, w.valid = ver, space, c, true
	return c, nil
}

// census reads a census in one read transaction, so its parts agree.
func census(ctx context.Context, conn *sql.Conn, space string) (c recall.Census, err error) {
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, err
	}
	defer tx.Rollback()
	// Apart, count(*) reads the b-tree's page counts and max(id) its last
	// row; together they would read every row.
	if err = tx.QueryRowContext(ctx, `SELECT count(*) FROM chunks`).Scan(&c.Chunks); err != nil {
		return c, err
	}
	if err = tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM chunks`).Scan(&c.MaxChunkID); err != nil {
		return c, err
	}
	err = tx.QueryRowContext(ctx, `SELECT name FROM spaces WHERE is_read`).Scan(&c.ReadSpace)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return c, err
	}
	if space != "" {
		if err = tx.QueryRowContext(ctx, `SELECT count(*) FROM vectors WHERE space = ?`, space).Scan(&c.Vectors); err != nil {
			return c, err
		}
	}
	return c, tx.Commit()
}

func (w *watcher) close() error {
	w.closed = true
	var errs []error
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	if w.db != nil {
		errs = append(errs, w.db.Close())
	}
	return errors.Join(errs...)
}

// ChunkIDs returns the id of every chunk, ascending.
func (db *DB) ChunkIDs(ctx context.Context) ([]int64, error) {
	return column[int64](ctx, db, "list chunks", `SELECT id FROM chunks ORDER BY id`)
}

// VectorKeys returns the keys of the vectors space holds.
func (db *DB) VectorKeys(ctx context.Context, space string) ([]string, error) {
	if err := db.spaceExists(ctx, space); err != nil {
		return nil, err
	}
	return column[string](ctx, db, "list vectors", `SELECT vkey FROM vectors WHERE space = ?`, space)
}

// column returns the one column of a query's rows, read from the pool.
func column[T any](ctx context.Context, db *DB, what, query string, args ...any) ([]T, error) {
	rows, err := db.ro.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, db.fail(ctx, err, what)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, db.fail(ctx, err, what)
		}
		out = append(out, v)
	}
	return out, db.fail(ctx, rows.Err(), what)
}
