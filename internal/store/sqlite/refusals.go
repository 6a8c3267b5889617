package sqlite

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"time"
)

// RecordRefusals records the texts (by vector key) the model of space
// (or its service) refused for their size; a key recorded before keeps its
// reason.
func (db *DB) RecordRefusals(ctx context.Context, space string, reasons map[string]string) error {
	if len(reasons) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(reasons))
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		if err := spaceIn(ctx, tx, space); err != nil {
			return err
		}
		ins, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO refusals (space, vkey, reason, at) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		at := time.Now().UnixNano()
		for _, k := range keys {
			if _, err := ins.ExecContext(ctx, space, k, reasons[k], at); err != nil {
				return err
			}
		}
		return nil
	})
}

// Refusals returns the recorded reasons of those of keys the model of
// space refused.
func (db *DB) Refusals(ctx context.Context, space string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	// Every batch a sweep or a memory write embeds asks, so the statement
	// is prepared once (its preparation was over half of a lookup).
	st, err := db.readStmt(ctx, `SELECT r.vkey, r.reason FROM json_each(?) j
			JOIN refusals r ON r.space = ? AND r.vkey = j.value`)
	if err != nil {
		return nil, db.fail(ctx, err, "read refusals")
	}
	for len(keys) > 0 {
		part := keys[:min(len(keys), 500)]
		keys = keys[len(part):]
		rows, err := st.QueryContext(ctx, jsonArray(part), space)
		if err != nil {
			return nil, db.fail(ctx, err, "read refusals")
		}
		for rows.Next() {
			var k, why string
			if err := rows.Scan(&k, &why); err != nil {
				rows.Close()
				return nil, db.fail(ctx, err, "read refusals")
			}
			out[k] = why
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, db.fail(ctx, err, "read refusals")
		}
	}
	return out, nil
}

// ForgetRefusals deletes the refusals of space and returns how many there
// were.
func (db *DB) ForgetRefusals(ctx context.Context, space string) (int, error) {
	var n int64
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		if err := spaceIn(ctx, tx, space); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM refusals WHERE space = ?`, space)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// spaceIn returns noSpace unless tx sees the space.
func spaceIn(ctx context.Context, tx *sql.Tx, space string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM spaces WHERE name = ?`, space).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return noSpace(space)
	}
	return nil
}

// tooLongSQL counts the refusals of space ?1 whose text a chunk holds
// and has no vector there (SpaceStats.TooLong).
var tooLongSQL = `SELECT count(*) FROM refusals r WHERE r.space = ?1
	AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = ?1 AND v.vkey = r.vkey)
	AND EXISTS (SELECT 1 FROM chunks c WHERE ` + holdsKey("c", "r.vkey") + `)`
