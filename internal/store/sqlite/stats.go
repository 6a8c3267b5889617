package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// RecordSweep appends a sweep record.
func (db *DB) RecordSweep(ctx context.Context, r recall.SweepRecord) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sweeps (vault, started, finished, files_seen, files_changed,
			files_skipped, files_failed, files_removed, chunks_written, bytes, vectors_missing, outcome)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Vault, r.Started.UnixNano(), r.Finished.UnixNano(), r.FilesSeen, r.FilesChanged, r.FilesSkipped,
			r.FilesFailed, r.FilesRemoved, r.ChunksWritten, r.Bytes, r.VectorsMissing, r.Outcome)
		return err
	})
}

// Stats summarises the store. It reads one snapshot, so its numbers agree
// with each other even while a sweep writes.
func (db *DB) Stats(ctx context.Context) (recall.Stats, error) {
	st := recall.Stats{Sources: map[recall.Kind]int{}, IndexStates: map[string]int{}}
	tx, err := db.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, db.fail(ctx, err, "stats")
	}
	defer tx.Rollback()
	err = func() error {
		rows, err := tx.QueryContext(ctx, `SELECT kind, count(*), coalesce(sum(text_bytes), 0) FROM sources s WHERE `+store.ListedSQL+` GROUP BY kind`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k recall.Kind
			var n int
			var bytes int64
			if err := rows.Scan(&k, &n, &bytes); err != nil {
				rows.Close()
				return err
			}
			st.Sources[k] = n
			st.Bytes += bytes
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}

		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(avg(mid_word), 0) FROM chunks`).
			Scan(&st.Chunks, &st.MidWordShare); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).
			Scan(&st.DBBytes); err != nil {
			return err
		}

		rows, err = tx.QueryContext(ctx, `SELECT index_state, count(*) FROM sources
			WHERE kind IN ('memory', 'diary') GROUP BY index_state`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				rows.Close()
				return err
			}
			st.IndexStates[state] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}

		spaces, err := tx.QueryContext(ctx, `SELECT `+spaceCols+` FROM spaces ORDER BY created_at, name`)
		if err != nil {
			return err
		}
		for spaces.Next() {
			s, err := scanSpace(spaces)
			if err != nil {
				spaces.Close()
				return err
			}
			st.Spaces = append(st.Spaces, recall.SpaceStats{VectorSpace: s})
		}
		spaces.Close()
		if err := spaces.Err(); err != nil {
			return err
		}
		for i := range st.Spaces {
			sp := &st.Spaces[i]
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM vectors WHERE space = ?`, sp.Name).Scan(&sp.Vectors); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `SELECT count(DISTINCT vkey) FROM chunks c
				WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = ? AND v.vkey = c.vkey)`, sp.Name).Scan(&sp.Missing); err != nil {
				return err
			}
			sp.Coverage = 1
			if total := sp.Vectors + sp.Missing; total > 0 {
				sp.Coverage = float64(sp.Vectors) / float64(total)
			}
		}

		var r recall.SweepRecord
		var started, finished int64
		err = tx.QueryRowContext(ctx, `SELECT vault, started, finished, files_seen, files_changed, files_skipped,
			files_failed, files_removed, chunks_written, bytes, vectors_missing, outcome
			FROM sweeps ORDER BY id DESC LIMIT 1`).Scan(&r.Vault, &started, &finished, &r.FilesSeen,
			&r.FilesChanged, &r.FilesSkipped, &r.FilesFailed, &r.FilesRemoved, &r.ChunksWritten, &r.Bytes,
			&r.VectorsMissing, &r.Outcome)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return err
		default:
			r.Started, r.Finished = time.Unix(0, started).UTC(), time.Unix(0, finished).UTC()
			st.LastSweep = &r
		}
		return nil
	}()
	return st, db.fail(ctx, err, "stats")
}
