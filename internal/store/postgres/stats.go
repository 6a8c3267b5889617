package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// RecordSweep appends a sweep record.
func (db *DB) RecordSweep(ctx context.Context, r recall.SweepRecord) error {
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO sweeps (vault, started, finished, files_seen, files_changed,
			files_skipped, files_failed, files_removed, chunks_written, bytes, vectors_missing, outcome)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			r.Vault, r.Started.UnixNano(), r.Finished.UnixNano(), r.FilesSeen, r.FilesChanged, r.FilesSkipped,
			r.FilesFailed, r.FilesRemoved, r.ChunksWritten, r.Bytes, r.VectorsMissing, r.Outcome)
		return err
	})
}

// Stats summarises the store. It reads one snapshot (a REPEATABLE READ
// transaction), so its numbers agree with each other even while a sweep
// writes. Unlike Census it counts: it is for a stats page, not for polling.
func (db *DB) Stats(ctx context.Context) (recall.Stats, error) {
	st := recall.Stats{Sources: map[recall.Kind]int{}, KindChunks: map[recall.Kind]int{},
		KindBytes: map[recall.Kind]int64{}, IndexStates: map[string]int{}}
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return st, db.fail(ctx, err, "stats")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	err = func() error {
		if err := sourceCounts(ctx, tx, &st, `SELECT kind, count(*), coalesce(sum(chunk_count), 0)::bigint,
			coalesce(sum(text_bytes), 0)::bigint FROM sources s WHERE `+store.ListedSQL+` GROUP BY kind`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(avg(mid_word::int), 0)::float8 FROM chunks`).
			Scan(&st.Chunks, &st.MidWordShare); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&st.DBBytes); err != nil {
			return err
		}
		if err := indexStates(ctx, tx, &st, `SELECT index_state, count(*) FROM sources
			WHERE kind IN ('memory', 'diary') GROUP BY index_state`); err != nil {
			return err
		}

		rows, err := tx.Query(ctx, `SELECT `+spaceCols+`, vectors FROM spaces ORDER BY created_at, name`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var n int
			s, err := scanSpace(rows, &n)
			if err != nil {
				rows.Close()
				return err
			}
			st.Spaces = append(st.Spaces, recall.SpaceStats{VectorSpace: s, Vectors: n})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range st.Spaces {
			sp := &st.Spaces[i]
			if err := tx.QueryRow(ctx, `SELECT count(DISTINCT vkey) FROM chunks c
				WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = $1 AND v.vkey = c.vkey)`, sp.Name).Scan(&sp.Missing); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, tooLongSQL, sp.Name).Scan(&sp.TooLong); err != nil {
				return err
			}
			sp.Coverage = 1
			if total := sp.Vectors + sp.Missing; total > 0 {
				sp.Coverage = float64(sp.Vectors) / float64(total)
			}
		}

		var r recall.SweepRecord
		var started, finished int64
		err = tx.QueryRow(ctx, `SELECT vault, started, finished, files_seen, files_changed, files_skipped,
			files_failed, files_removed, chunks_written, bytes, vectors_missing, outcome
			FROM sweeps ORDER BY id DESC LIMIT 1`).Scan(&r.Vault, &started, &finished, &r.FilesSeen,
			&r.FilesChanged, &r.FilesSkipped, &r.FilesFailed, &r.FilesRemoved, &r.ChunksWritten, &r.Bytes,
			&r.VectorsMissing, &r.Outcome)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
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
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return st, db.fail(ctx, err, "owner stats")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	err = sourceCounts(ctx, tx, &st, `SELECT kind, count(*), coalesce(sum(chunk_count), 0)::bigint,
		coalesce(sum(text_bytes), 0)::bigint FROM sources WHERE kind IN ('memory', 'diary') AND owner = $1 GROUP BY kind`, owner)
	if err == nil {
		err = indexStates(ctx, tx, &st, `SELECT index_state, count(*) FROM sources
			WHERE kind IN ('memory', 'diary') AND owner = $1 GROUP BY index_state`, owner)
	}
	for _, n := range st.KindChunks {
		st.Chunks += n
	}
	return st, db.fail(ctx, err, "owner stats")
}

// sourceCounts adds up the rows (kind, sources, chunks, bytes) of query.
func sourceCounts(ctx context.Context, tx pgx.Tx, st *recall.Stats, query string, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return store.ScanSourceCounts(rows, st)
}

// indexStates reads the rows (index state, sources) of query.
func indexStates(ctx context.Context, tx pgx.Tx, st *recall.Stats, query string, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return store.ScanIndexStates(rows, st)
}
