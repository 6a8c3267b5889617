package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// maxDim is pgvector's largest dimension for a vector column.
const maxDim = 16000

// CreateSpace records a vector space, or returns the existing one when it
// has the same parameters (ECONFLICT when they differ). The first space
// becomes the read space, and every source is settled against it
// (settleStates): pending while a chunk has no vector there, else ok.
func (db *DB) CreateSpace(ctx context.Context, s recall.VectorSpace) (recall.VectorSpace, error) {
	if err := store.ValidateSpace(s); err != nil {
		return recall.VectorSpace{}, err
	}
	if s.Dim > maxDim {
		return recall.VectorSpace{}, recall.Errorf(recall.EINVALID, "vector space %q: pgvector holds at most %d dimensions, got %d", s.Name, maxDim, s.Dim)
	}
	var out recall.VectorSpace
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		cur, err := scanSpace(tx.QueryRow(ctx, `SELECT `+spaceCols+` FROM spaces WHERE name = $1`, s.Name))
		if err == nil {
			if cur.Provider != s.Provider || cur.Model != s.Model || cur.Dim != s.Dim || cur.Normalized != s.Normalized {
				return recall.Errorf(recall.ECONFLICT, "vector space %q exists as %s/%s with %d dimensions (normalized %t)",
					s.Name, cur.Provider, cur.Model, cur.Dim, cur.Normalized)
			}
			out = cur
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var others int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM spaces`).Scan(&others); err != nil {
			return err
		}
		out = recall.VectorSpace{Name: s.Name, Provider: s.Provider, Model: s.Model, Dim: s.Dim,
			Normalized: s.Normalized, Read: others == 0, CreatedAt: time.Now().UTC()}
		_, err = tx.Exec(ctx, `INSERT INTO spaces (name, provider, model, dim, normalized, is_read, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, out.Name, out.Provider, out.Model, out.Dim, out.Normalized, out.Read, out.CreatedAt.UnixNano())
		if err != nil || !out.Read {
			return err
		}
		// Index states say what semantic search finds, and until now it
		// had no space to read: a source written "skipped" (no embedder,
		// no space) or "ok" (a sweep without an embedder) is pending while
		// a chunk lacks a vector in the new space, which repair fills.
		return settleStates(ctx, tx, `true`)
	})
	if err != nil {
		return recall.VectorSpace{}, err
	}
	return out, nil
}

const spaceCols = `name, provider, model, dim, normalized, is_read, created_at, repair_cursor`

func scanSpace(row pgx.Row, extra ...any) (recall.VectorSpace, error) {
	var s recall.VectorSpace
	var created int64
	if err := row.Scan(append([]any{&s.Name, &s.Provider, &s.Model, &s.Dim, &s.Normalized, &s.Read, &created, &s.RepairCursor}, extra...)...); err != nil {
		return recall.VectorSpace{}, err
	}
	s.CreatedAt = time.Unix(0, created).UTC()
	return s, nil
}

// Spaces lists the vector spaces in the order they were created.
func (db *DB) Spaces(ctx context.Context) ([]recall.VectorSpace, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+spaceCols+` FROM spaces ORDER BY created_at, name`)
	if err != nil {
		return nil, db.fail(ctx, err, "list spaces")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (recall.VectorSpace, error) { return scanSpace(r) })
	return out, db.fail(ctx, err, "list spaces")
}

func noSpace(name string) error {
	return recall.Errorf(recall.ENOTFOUND, "no vector space %q", name)
}

// UseSpace makes the named space the one searches read from.
func (db *DB) UseSpace(ctx context.Context, name string) error {
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM spaces WHERE name = $1`, name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return noSpace(name)
		}
		if _, err := tx.Exec(ctx, `UPDATE spaces SET is_read = false WHERE is_read AND name != $1`, name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE spaces SET is_read = true WHERE name = $1`, name); err != nil {
			return err
		}
		// Index states say what semantic search finds: each source is
		// "ok" exactly when every chunk has a vector in the new read
		// space. Only the rows whose state changes are written.
		return settleStates(ctx, tx, `true`)
	})
}

// DropSpace deletes a space and its vectors; EINVALID for the read space.
func (db *DB) DropSpace(ctx context.Context, name string) error {
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		var read bool
		err := tx.QueryRow(ctx, `SELECT is_read FROM spaces WHERE name = $1`, name).Scan(&read)
		if errors.Is(err, pgx.ErrNoRows) {
			return noSpace(name)
		}
		if err != nil {
			return err
		}
		if read {
			return recall.Errorf(recall.EINVALID, "vector space %q is the read space; use another one before dropping it", name)
		}
		// The foreign key cascades to the space's vectors.
		_, err = tx.Exec(ctx, `DELETE FROM spaces WHERE name = $1`, name)
		return err
	})
}

// PutVectors stores vectors in one transaction. A vector whose key no chunk
// holds (its chunk was replaced while it was being embedded) is skipped, so a
// vector without a chunk cannot exist.
func (db *DB) PutVectors(ctx context.Context, vecs []recall.Vector) error {
	for _, v := range vecs {
		if err := store.ValidateVector(v); err != nil {
			return err
		}
	}
	if len(vecs) == 0 {
		return nil
	}
	return db.writeTx(ctx, func(tx pgx.Tx) error { return putVectors(ctx, tx, vecs) })
}

// putVectors stores already validated vectors, checking each against its
// space's dimension before anything is written. A text's vector is one or
// more units of the space's dimension (recall.Vector), stored one row per
// unit; storing a key's vector replaces all of its units. A key no chunk
// holds gets none (a vector without a chunk cannot exist).
//
// A batch costs a few statements whatever its size: the keys some chunk
// holds and the units stored for them are looked up and deleted a key at
// a time by index in two statements, and the new units go by COPY in
// pgvector's binary format. Two statements per vector, each sending its
// units as a real[] that the server took apart into vectors, had cost a
// sweep's 200-chunk write some 200 ms (BenchmarkWriteVectors).
func putVectors(ctx context.Context, tx pgx.Tx, vecs []recall.Vector) error {
	if len(vecs) == 0 {
		return nil
	}
	dims := map[string]int{}
	for _, v := range vecs {
		dim, ok := dims[v.Space]
		if !ok {
			err := tx.QueryRow(ctx, `SELECT dim FROM spaces WHERE name = $1`, v.Space).Scan(&dim)
			if errors.Is(err, pgx.ErrNoRows) {
				return noSpace(v.Space)
			}
			if err != nil {
				return err
			}
			dims[v.Space] = dim
		}
		if len(v.Vec)%dim != 0 {
			return recall.Errorf(recall.ECONFLICT, "space %s holds %d-dim vectors, got %d values", v.Space, dim, len(v.Vec))
		}
	}
	// The last vector of a key in the batch wins; each key is written once.
	last := map[[2]string]int{}
	for i, v := range vecs {
		last[[2]string{v.Space, v.Key}] = i
	}
	keysOf := map[string][]string{} // space -> its keys in the batch
	var keys []string               // every key, once
	seen := map[string]bool{}
	for i, v := range vecs {
		if last[[2]string{v.Space, v.Key}] != i {
			continue
		}
		keysOf[v.Space] = append(keysOf[v.Space], v.Key)
		if !seen[v.Key] {
			seen[v.Key] = true
			keys = append(keys, v.Key)
		}
	}
	spaces := slices.Sorted(maps.Keys(keysOf))
	var b pgx.Batch
	b.Queue(heldKeysSQL, keys)
	for _, space := range spaces {
		b.Queue(deleteUnitsSQL, space, keysOf[space])
	}
	br := tx.SendBatch(ctx, &b)
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return fmt.Errorf("store vectors: %w", err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		br.Close()
		return fmt.Errorf("store vectors: %w", err)
	}
	delta := map[string]int64{}
	for _, space := range spaces {
		var existed int64
		if err := br.QueryRow().Scan(&existed); err != nil {
			br.Close()
			return fmt.Errorf("store vectors: %w", err)
		}
		delta[space] -= existed
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("store vectors: %w", err)
	}
	isHeld := make(map[string]bool, len(held))
	for _, k := range held {
		isHeld[k] = true
	}
	type unitRow struct {
		space, key string
		unit       int32
		vec        []byte
	}
	var units []unitRow
	for i, v := range vecs {
		if last[[2]string{v.Space, v.Key}] != i || !isHeld[v.Key] {
			continue
		}
		dim := dims[v.Space]
		buf := encodeUnits(v.Vec, dim)
		for u := range len(v.Vec) / dim {
			units = append(units, unitRow{v.Space, v.Key, int32(u), buf[u*(4+4*dim) : (u+1)*(4+4*dim)]})
		}
		delta[v.Space]++
	}
	if len(units) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"vectors"}, []string{"space", "vkey", "unit", "vec"},
			pgx.CopyFromSlice(len(units), func(i int) ([]any, error) {
				u := &units[i]
				return []any{u.space, u.key, u.unit, u.vec}, nil
			})); err != nil {
			return fmt.Errorf("store vectors: %w", err)
		}
	}
	for _, space := range spaces {
		if d := delta[space]; d != 0 {
			if _, err := tx.Exec(ctx, `UPDATE spaces SET vectors = vectors + $1 WHERE name = $2`, d, space); err != nil {
				return fmt.Errorf("count vectors: %w", err)
			}
		}
	}
	return settleIndexStates(ctx, tx, vecs)
}

// heldKeysSQL returns those of the keys $1 some chunk holds, a probe each.
var heldKeysSQL = `SELECT k.key FROM unnest($1::text[]) AS k(key)
	WHERE EXISTS (SELECT 1 FROM chunks c WHERE ` + holdsKey("c", "k.key") + ` OFFSET 0)`

// deleteUnitsSQL deletes the units stored in space $1 for the keys $2,
// counting the keys that had a vector there.
const deleteUnitsSQL = `WITH old AS (DELETE FROM vectors WHERE space = $1 AND vkey = ANY($2::text[]) RETURNING unit)
	SELECT count(*) FILTER (WHERE unit = 0) FROM old`

// encodeUnits encodes vec, whole units of dim values, in pgvector's binary
// format (vector_recv), one unit after another: each a 16-bit dimension,
// 16 unused bits, then its values as big-endian float4s. COPY sends each
// unit's bytes as they are: pgx passes a []byte for a column of a type it
// does not know (vector) unchanged, as it would a bytea.
func encodeUnits(vec []float32, dim int) []byte {
	size := 4 + 4*dim
	b := make([]byte, len(vec)/dim*size)
	for u := range len(vec) / dim {
		out := b[u*size : (u+1)*size]
		binary.BigEndian.PutUint16(out, uint16(dim))
		for i, x := range vec[u*dim : (u+1)*dim] {
			binary.BigEndian.PutUint32(out[4+4*i:], math.Float32bits(x))
		}
	}
	return b
}

// settleSpaceSQL is settleIndexStates's statement: the pending sources
// holding one of the keys $1 whose every chunk now has a vector in space
// $2, when that is the read space. The sources are found by their keys'
// chunks (a probe per key; ARRAY() keeps PostgreSQL from joining sources to
// them by reading every source), and each one's chunks and vectors
// checked as readState does.
var settleSpaceSQL = `UPDATE sources SET index_state = 'ok'
	WHERE sid = ANY(ARRAY(SELECT c.sid FROM unnest($1::text[]) AS k(key)
			CROSS JOIN LATERAL (SELECT c.sid FROM chunks c WHERE ` + holdsKey("c", "k.key") + ` OFFSET 0) c))
	AND index_state = 'pending'
	AND EXISTS (SELECT 1 FROM spaces WHERE name = $2 AND is_read)
	AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.sid = sources.sid
		AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = $2 AND v.vkey = c.vkey AND v.unit = 0 OFFSET 0) OFFSET 0)`

// settleIndexStates marks "ok" every pending source that the vectors just
// stored in the read space complete: each of its chunks now has a vector
// there. It runs in the same transaction, so a memory reads "pending"
// exactly while a vector semantic search needs is missing. Vectors of
// another space (a model switch's next one) settle nothing: UseSpace
// settles every source when that space becomes the read space.
func settleIndexStates(ctx context.Context, tx pgx.Tx, vecs []recall.Vector) error {
	bySpace := map[string][]string{}
	for _, v := range vecs {
		bySpace[v.Space] = append(bySpace[v.Space], v.Key)
	}
	for _, space := range slices.Sorted(maps.Keys(bySpace)) {
		if _, err := tx.Exec(ctx, settleSpaceSQL, bySpace[space], space); err != nil {
			return fmt.Errorf("settle index states: %w", err)
		}
	}
	return nil
}

// holdsKey is the SQL condition that the chunk row aliased c holds the
// vector key the SQL expression key gives, found through chunks_vkey.
func holdsKey(c, key string) string {
	return c + ".vkey = " + key
}

// MissingVectors returns up to limit distinct vector keys that have no
// vector in the space and whose lowest chunk id is > after, ordered by that
// id: a repair that pages with the last id seen as cursor meets each key
// once.
func (db *DB) MissingVectors(ctx context.Context, space string, after int64, limit int) ([]recall.PendingText, error) {
	if limit <= 0 {
		return nil, nil
	}
	if err := db.spaceExists(ctx, space); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT c.id, c.vkey, c.text, c.header FROM chunks c
		WHERE c.id > $1
		AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = $2 AND v.vkey = c.vkey)
		AND NOT EXISTS (SELECT 1 FROM chunks e WHERE e.vkey = c.vkey AND e.id < c.id)
		ORDER BY c.id LIMIT $3`, after, space, limit)
	if err != nil {
		return nil, db.fail(ctx, err, "missing vectors")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (recall.PendingText, error) {
		var p recall.PendingText
		err := r.Scan(&p.ChunkID, &p.Key, &p.Text, &p.Header)
		return p, err
	})
	return out, db.fail(ctx, err, "missing vectors")
}

func (db *DB) spaceExists(ctx context.Context, space string) error {
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM spaces WHERE name = $1`, space).Scan(&n); err != nil {
		return db.fail(ctx, err, "read space")
	}
	if n == 0 {
		return noSpace(space)
	}
	return nil
}

// SetRepairCursor records how far repair got in a space.
func (db *DB) SetRepairCursor(ctx context.Context, space string, chunkID int64) error {
	return db.writeTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE spaces SET repair_cursor = $1 WHERE name = $2`, chunkID, space)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return noSpace(space)
		}
		return nil
	})
}

// VectorsByKey returns the space's vectors for the given keys.
func (db *DB) VectorsByKey(ctx context.Context, space string, keys []string) (map[string][]float32, error) {
	out := map[string][]float32{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT v.vkey, `+unitsAgg+` FROM vectors v
		WHERE v.space = $1 AND v.vkey = ANY($2::text[]) GROUP BY v.vkey`, space, keys)
	if err != nil {
		return nil, db.fail(ctx, err, "read vectors")
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		var b pgtype.DriverBytes
		if err := rows.Scan(&h, &b); err != nil {
			return nil, db.fail(ctx, err, "read vectors")
		}
		if out[h], err = decodeUnits(b); err != nil {
			return nil, fmt.Errorf("vector %s in %s: %w", h, space, err)
		}
	}
	return out, db.fail(ctx, rows.Err(), "read vectors")
}

// unitsAgg aggregates the rows v of one key's vector into what
// decodeUnits reads: its units in order, each in pgvector's binary format
// (vector_send), concatenated. The binary format costs the server and the
// driver a byte swap per value; pgvector's text format, or a cast to
// real[] (an array of its own, decoded element by element by the driver),
// cost several times as much (BenchmarkIndexLoad).
const unitsAgg = `string_agg(vector_send(v.vec), ''::bytea ORDER BY v.unit)`

// decodeUnits decodes units in pgvector's binary format, concatenated:
// each a 16-bit dimension, 16 unused bits, then that many big-endian
// float4s. Every unit must have the first one's dimension.
func decodeUnits(b []byte) ([]float32, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("vector of %d bytes, too short for pgvector's binary format", len(b))
	}
	dim := int(binary.BigEndian.Uint16(b))
	size := 4 + 4*dim
	if dim == 0 || len(b)%size != 0 {
		return nil, fmt.Errorf("vector of %d bytes is not whole units of %d dimensions", len(b), dim)
	}
	v := make([]float32, 0, len(b)/size*dim)
	for ; len(b) > 0; b = b[size:] {
		if int(binary.BigEndian.Uint16(b)) != dim {
			return nil, fmt.Errorf("vector with units of %d and %d dimensions", dim, binary.BigEndian.Uint16(b))
		}
		for i := 4; i < size; i += 4 {
			v = append(v, math.Float32frombits(binary.BigEndian.Uint32(b[i:])))
		}
	}
	return v, nil
}

// VectorKeys returns the keys of the vectors space holds.
func (db *DB) VectorKeys(ctx context.Context, space string) ([]string, error) {
	if err := db.spaceExists(ctx, space); err != nil {
		return nil, err
	}
	return column[string](ctx, db, "list vectors", `SELECT vkey FROM vectors WHERE space = $1 AND unit = 0`, space)
}

// StreamVectors is ScanVectors, whose chunk id order and vectors of their
// own satisfy its contract; a page is read ahead while fn runs.
func (db *DB) StreamVectors(ctx context.Context, space string, fn func(c recall.IndexedChunk, vec []float32) error) error {
	return db.ScanVectors(ctx, space, fn)
}

// ScanVectors calls fn for every chunk with a vector in the space, in chunk
// id order, reading a page of chunks at a time (keyset on the chunk id;
// see scanPages), so the vectors are never all in memory and no
// connection is held while fn runs. A page is one statement whose plan
// does not depend on the store's size: chunks by their primary key, each
// one's source and vector by theirs, a row per chunk with its units
// aggregated (unitsAgg); chunks without a vector come back with none, so
// that the page's last chunk id is known.
func (db *DB) ScanVectors(ctx context.Context, space string, fn func(c recall.IndexedChunk, vec []float32) error) error {
	if err := db.spaceExists(ctx, space); err != nil {
		return err
	}
	type item struct {
		c   recall.IndexedChunk
		vec []float32
	}
	read := func(ctx context.Context, after int64) ([]item, int64, bool, error) {
		// Planned for these values each time: a prepared statement's
		// generic plan, not knowing how few chunks the page has, joins
		// the sources by hashing and sorts the page, vectors and all,
		// spilling it to disk.
		rows, err := db.pool.Query(ctx, `SELECT `+indexedChunkCols+`,
				(SELECT `+unitsAgg+` FROM vectors v WHERE v.space = $1 AND v.vkey = c.vkey)
			FROM (SELECT id, hash, vkey, sid FROM chunks WHERE id > $2 ORDER BY id LIMIT $3) c
			JOIN sources s ON s.sid = c.sid ORDER BY c.id`, pgx.QueryExecModeDescribeExec, space, after, scanChunkPage)
		if err != nil {
			return nil, 0, false, db.fail(ctx, err, "scan vectors")
		}
		defer rows.Close()
		var page []item
		n, last := 0, after
		for rows.Next() {
			var b pgtype.DriverBytes
			c, err := scanIndexedChunk(rows, &b)
			if err != nil {
				return nil, 0, false, db.fail(ctx, err, "scan vectors")
			}
			n, last = n+1, c.ID
			if b == nil {
				continue
			}
			vec, err := decodeUnits(b)
			if err != nil {
				return nil, 0, false, fmt.Errorf("vector %s in %s: %w", c.VectorKey, space, err)
			}
			page = append(page, item{c, vec})
		}
		if err := rows.Err(); err != nil {
			return nil, 0, false, db.fail(ctx, err, "scan vectors")
		}
		return page, last, n == scanChunkPage, nil
	}
	return scanPages(ctx, read, func(it item) error { return fn(it.c, it.vec) })
}
