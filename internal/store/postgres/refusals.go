package postgres

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// RecordRefusals records the texts (by vector key) the model of space
// (or its service) refused for their size; a key recorded before keeps its
// reason.
func (db *DB) RecordRefusals(ctx context.Context, space string, reasons map[string]string) error {
	if len(reasons) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(reasons))
	why := make([]string, len(keys))
	for i, k := range keys {
		why[i] = reasons[k]
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		if err := spaceIn(ctx, tx, space); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO refusals (space, vkey, reason, at)
			SELECT $1, k.key, k.why, $4 FROM unnest($2::text[], $3::text[]) AS k(key, why)
			ON CONFLICT DO NOTHING`, space, keys, why, time.Now().UnixNano())
		return err
	})
}

// Refusals returns the recorded reasons of those of keys the model of
// space refused.
func (db *DB) Refusals(ctx context.Context, space string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT vkey, reason FROM refusals WHERE vkey = ANY($1::text[]) AND space = $2`, keys, space)
	if err != nil {
		return nil, db.fail(ctx, err, "read refusals")
	}
	defer rows.Close()
	for rows.Next() {
		var k, why string
		if err := rows.Scan(&k, &why); err != nil {
			return nil, db.fail(ctx, err, "read refusals")
		}
		out[k] = why
	}
	return out, db.fail(ctx, rows.Err(), "read refusals")
}

// ForgetRefusals deletes the refusals of space and returns how many there
// were.
func (db *DB) ForgetRefusals(ctx context.Context, space string) (int, error) {
	var n int64
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		if err := spaceIn(ctx, tx, space); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM refusals WHERE space = $1`, space)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// spaceIn returns noSpace unless tx sees the space.
func spaceIn(ctx context.Context, tx pgx.Tx, space string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM spaces WHERE name = $1`, space).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return noSpace(space)
	}
	return nil
}

// tooLongSQL counts the refusals of space $1 whose text a chunk holds and
// has no vector there (SpaceStats.TooLong).
var tooLongSQL = `SELECT count(*) FROM refusals r WHERE r.space = $1
	AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = $1 AND v.vkey = r.vkey)
	AND EXISTS (SELECT 1 FROM chunks c WHERE ` + holdsKey("c", "r.vkey") + `)`
