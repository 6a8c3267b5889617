package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// vectorKeysVersion is the migration (0004) that keyed vectors by
// chunks.vkey; before it they were keyed by chunks.hash.
const vectorKeysVersion = 4

// ErrInconsistent is wrapped by IntegrityCheck when the store's derived
// data (counters, document frequencies, postings) disagree with its rows.
var ErrInconsistent = errors.New("store is inconsistent")

// IntegrityCheck verifies the invariants the writers keep: the counters
// row and each space's vector counter against what they count, the
// document frequencies against the postings, postings and vectors against
// the chunks, and each source's chunk count. It reads every table, so it is
// for tests and `recall check`-style commands, not for polling. A failure
// wraps ErrInconsistent. The invariants hold at every schema version so far
// (0002 rekeyed long terms alike in postings, terms and the chunks' lists;
// 0003 added a column none of them reads; 0004 keyed vectors by chunks.vkey
// instead of chunks.hash, the one invariant read by the columns the
// database has), so a database left at an older one (KeepSchema) is
// checked alike; a migration that changes that must leave the invariants
// it brings to the databases it has upgraded.
func (db *DB) IntegrityCheck(ctx context.Context) error {
	vectorsWithoutChunk := `SELECT count(*) FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.vkey = v.vkey)`
	if db.older != 0 && db.older < vectorKeysVersion {
		vectorsWithoutChunk = `SELECT count(*) FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = v.hash)`
	}
	invariants := []struct{ what, query string }{
		{"chunk counter off", `SELECT count(*) FROM counters k WHERE k.chunks != (SELECT count(*) FROM chunks)`},
		{"largest chunk id counter off", `SELECT count(*) FROM counters k WHERE k.max_chunk_id != (SELECT coalesce(max(id), 0) FROM chunks)`},
		{"token total off", `SELECT count(*) FROM counters k WHERE k.total_len != (SELECT coalesce(sum(tok_len), 0) FROM chunks)`},
		{"spaces whose vector counter is off", `SELECT count(*) FROM spaces sp
			WHERE sp.vectors != (SELECT count(*) FROM vectors v WHERE v.space = sp.name AND v.unit = 0)`},
		{"terms whose document frequency is off", `SELECT count(*) FROM terms t FULL JOIN
			(SELECT term, count(*) AS n FROM postings GROUP BY term) p ON p.term = t.term
			WHERE t.df IS DISTINCT FROM p.n`},
		{"postings without a chunk", `SELECT count(*) FROM postings p WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = p.chunk_id)`},
		{"postings their chunk does not list", `SELECT count(*) FROM postings p JOIN chunks c ON c.id = p.chunk_id WHERE NOT p.term = ANY(c.terms)`},
		{"chunk terms without a posting", `SELECT count(*) FROM chunks c CROSS JOIN LATERAL unnest(c.terms) AS t(term)
			WHERE NOT EXISTS (SELECT 1 FROM postings p WHERE p.term = t.term AND p.chunk_id = c.id)`},
		{"vectors without a chunk", vectorsWithoutChunk},
		{"vectors of the wrong size for their space", `SELECT count(*) FROM vectors v JOIN spaces sp ON sp.name = v.space
			WHERE vector_dims(v.vec) != sp.dim`},
		{"sources whose chunk_count is wrong", `SELECT count(*) FROM sources s WHERE chunk_count != (SELECT count(*) FROM chunks c WHERE c.sid = s.sid)`},
		{"chunks whose source attributes are stale", `SELECT count(*) FROM chunks c JOIN sources s ON s.sid = c.sid
			WHERE c.kind != s.kind OR c.owner != s.owner OR c.category != s.category
			OR c.date_lo IS DISTINCT FROM s.date_lo OR c.date_hi IS DISTINCT FROM s.date_hi`},
		{"read spaces", `SELECT CASE WHEN count(*) > 1 THEN count(*) ELSE 0 END FROM spaces WHERE is_read`},
	}
	var problems []string
	for _, inv := range invariants {
		var n int
		if err := db.pool.QueryRow(ctx, inv.query).Scan(&n); err != nil {
			return db.fail(ctx, err, "integrity check")
		}
		if n > 0 {
			problems = append(problems, fmt.Sprintf("%d %s", n, inv.what))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w: %s", db.where, ErrInconsistent, strings.Join(problems, "; "))
	}
	return nil
}
