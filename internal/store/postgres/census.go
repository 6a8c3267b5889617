package postgres

import (
	"context"

	"github.com/recall-mcp/recall"
)

// Census summarises the chunks and the vectors of space ("" for none, or a
// space that does not exist). It reads the counters row that every write
// transaction keeps up to date, the read space and the space's vector
// counter: one statement over three small tables, cheap to poll every few
// seconds however large the store. As writers are serialised (see the
// package doc), a chunk added by another process always moves the count or
// the largest id past what an earlier census saw.
func (db *DB) Census(ctx context.Context, space string) (recall.Census, error) {
	var c recall.Census
	err := db.pool.QueryRow(ctx, `SELECT k.chunks, k.max_chunk_id,
			coalesce((SELECT name FROM spaces WHERE is_read), ''),
			coalesce((SELECT vectors FROM spaces WHERE name = $1), 0)
		FROM counters k`, space).Scan(&c.Chunks, &c.MaxChunkID, &c.ReadSpace, &c.Vectors)
	if err != nil {
		return recall.Census{}, db.fail(ctx, err, "census")
	}
	return c, nil
}
