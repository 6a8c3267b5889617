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
	st := recall.Stats{Sources: map[recall.Kind]int{}, KindChunks: map[recall.Kind]int{},
		KindBytes: map[recall.Kind]int64{}, IndexStates: map[string]int{}}
	tx, err := db.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, db.fail(ctx, err, "stats")
	}
	defer tx.Rollback()
	err = func() error {
		if err := sourceCounts(ctx, tx, &st, `SELECT kind, count(*), coalesce(sum(chunk_count), 0),
			coalesce(sum(text_bytes), 0) FROM sources s WHERE `+store.ListedSQL+` GROUP BY kind`); err != nil {
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

		if err := indexStates(ctx, tx, &st, `SELECT index_state, count(*) FROM sources
			WHERE kind IN ('memory', 'diary') GROUP BY index_state`); err != nil {
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
			if err := tx.QueryRowContext(ctx, tooLongSQL, sp.Name).Scan(&sp.TooLong); err != nil {
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

// OwnerStats counts one owner's memories and diary days (recall.Store).
func (db *DB) OwnerStats(ctx context.Context, owner string) (recall.Stats, error) {
	st := recall.Stats{Sources: map[recall.Kind]int{}, KindChunks: map[recall.Kind]int{},
		KindBytes: map[recall.Kind]int64{}, IndexStates: map[string]int{}}
	tx, err := db.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, db.fail(ctx, err, "owner stats")
	}
	defer tx.Rollback()
	err = sourceCounts(ctx, tx, &st, `SELECT kind, count(*), coalesce(sum(chunk_count), 0),
		coalesce(sum(text_bytes), 0) FROM sources WHERE kind IN ('memory', 'diary') AND owner = ? GROUP BY kind`, owner)
	if err == nil {
		err = indexStates(ctx, tx, &st, `SELECT index_state, count(*) FROM sources
			WHERE kind IN ('memory', 'diary') AND owner = ? GROUP BY index_state`, owner)
	}
	for _, n := range st.KindChunks {
		st.Chunks += n
	}
	return st, db.fail(ctx, err, "owner stats")
}

// sourceCounts adds up the rows (kind, sources, chunks, bytes) of query.
func sourceCounts(ctx context.Context, tx *sql.Tx, st *recall.Stats, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return store.ScanSourceCounts(rows, st)
}

// indexStates reads the rows (index state, sources) of query.
func indexStates(ctx context.Context, tx *sql.Tx, st *recall.Stats, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return store.ScanIndexStates(rows, st)
}
