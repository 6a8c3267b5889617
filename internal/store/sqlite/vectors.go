package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// CreateSpace records a vector space, or returns the existing one when it
// has the same parameters (ECONFLICT when they differ). The first space
// becomes the read space, and every source is settled against it
// (settleStates): pending while a chunk has no vector there, else ok.
func (db *DB) CreateSpace(ctx context.Context, s recall.VectorSpace) (recall.VectorSpace, error) {
	if err := store.ValidateSpace(s); err != nil {
		return recall.VectorSpace{}, err
	}
	var out recall.VectorSpace
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		cur, err := scanSpace(tx.QueryRowContext(ctx, `SELECT `+spaceCols+` FROM spaces WHERE name = ?`, s.Name))
		if err == nil {
			if cur.Provider != s.Provider || cur.Model != s.Model || cur.Dim != s.Dim || cur.Normalized != s.Normalized {
				return recall.Errorf(recall.ECONFLICT, "vector space %q exists as %s/%s with %d dimensions (normalized %t)",
					s.Name, cur.Provider, cur.Model, cur.Dim, cur.Normalized)
			}
			out = cur
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		var others int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM spaces`).Scan(&others); err != nil {
			return err
		}
		out = recall.VectorSpace{Name: s.Name, Provider: s.Provider, Model: s.Model, Dim: s.Dim,
			Normalized: s.Normalized, Read: others == 0, CreatedAt: time.Now().UTC()}
		_, err = tx.ExecContext(ctx, `INSERT INTO spaces (name, provider, model, dim, normalized, is_read, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, out.Name, out.Provider, out.Model, out.Dim, out.Normalized, out.Read, out.CreatedAt.UnixNano())
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

func scanSpace(sc scanner) (recall.VectorSpace, error) {
	var s recall.VectorSpace
	var created int64
	if err := sc.Scan(&s.Name, &s.Provider, &s.Model, &s.Dim, &s.Normalized, &s.Read, &created, &s.RepairCursor); err != nil {
		return recall.VectorSpace{}, err
	}
	s.CreatedAt = time.Unix(0, created).UTC()
	return s, nil
}

// Spaces lists the vector spaces in the order they were created.
func (db *DB) Spaces(ctx context.Context) ([]recall.VectorSpace, error) {
	rows, err := db.ro.QueryContext(ctx, `SELECT `+spaceCols+` FROM spaces ORDER BY created_at, name`)
	if err != nil {
		return nil, db.fail(ctx, err, "list spaces")
	}
	defer rows.Close()
	var out []recall.VectorSpace
	for rows.Next() {
		s, err := scanSpace(rows)
		if err != nil {
			return nil, db.fail(ctx, err, "list spaces")
		}
		out = append(out, s)
	}
	return out, db.fail(ctx, rows.Err(), "list spaces")
}

func noSpace(name string) error {
	return recall.Errorf(recall.ENOTFOUND, "no vector space %q", name)
}

// UseSpace makes the named space the one searches read from.
func (db *DB) UseSpace(ctx context.Context, name string) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM spaces WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return noSpace(name)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE spaces SET is_read = 0 WHERE is_read AND name != ?`, name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE spaces SET is_read = 1 WHERE name = ?`, name); err != nil {
			return err
		}
		// Index states say what semantic search finds: each source is
		// "ok" exactly when every chunk has a vector in the new read space.
		// Only the rows whose state changes are written.
		return settleStates(ctx, tx, `true`)
	})
}

// DropSpace deletes a space and its vectors; EINVALID for the read space.
func (db *DB) DropSpace(ctx context.Context, name string) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		var read bool
		err := tx.QueryRowContext(ctx, `SELECT is_read FROM spaces WHERE name = ?`, name).Scan(&read)
		if err == sql.ErrNoRows {
			return noSpace(name)
		}
		if err != nil {
			return err
		}
		if read {
			return recall.Errorf(recall.EINVALID, "vector space %q is the read space; use another one before dropping it", name)
		}
		// The foreign key cascades to the space's vectors.
		_, err = tx.ExecContext(ctx, `DELETE FROM spaces WHERE name = ?`, name)
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
	return db.writeTx(ctx, func(tx *sql.Tx) error { return putVectors(ctx, tx, vecs) })
}

// putVectors stores already validated vectors, checking each against its
// space's dimension.
func putVectors(ctx context.Context, tx *sql.Tx, vecs []recall.Vector) error {
	if len(vecs) == 0 {
		return nil
	}
	dims := map[string]int{}
	ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO vectors (space, vkey, vec)
		SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM chunks c WHERE `+holdsKey("c", "?2")+`)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, v := range vecs {
		dim, ok := dims[v.Space]
		if !ok {
			err := tx.QueryRowContext(ctx, `SELECT dim FROM spaces WHERE name = ?`, v.Space).Scan(&dim)
			if err == sql.ErrNoRows {
				return noSpace(v.Space)
			}
			if err != nil {
				return err
			}
			dims[v.Space] = dim
		}
		// A chunk's vector is one or more unit vectors of the space's
		// dimension, concatenated (recall.Vector).
		if len(v.Vec)%dim != 0 {
			return recall.Errorf(recall.ECONFLICT, "space %s holds %d-dim vectors, got %d values", v.Space, dim, len(v.Vec))
		}
		if _, err := ins.ExecContext(ctx, v.Space, v.Key, encodeVec(v.Vec)); err != nil {
			return fmt.Errorf("store vector: %w", err)
		}
	}
	return settleIndexStates(ctx, tx, vecs)
}

// settleIndexStates marks "ok" every pending source that the vectors just
// stored in the read space complete: each of its chunks now has a vector
// there. It runs in the same transaction, so a memory reads "pending"
// exactly while a vector semantic search needs is missing. Vectors of
// another space (a model switch's next one) settle nothing: UseSpace
// settles every source when that space becomes the read space.
func settleIndexStates(ctx context.Context, tx *sql.Tx, vecs []recall.Vector) error {
	bySpace := map[string][]string{}
	for _, v := range vecs {
		bySpace[v.Space] = append(bySpace[v.Space], v.Key)
	}
	for space, keys := range bySpace {
		for len(keys) > 0 {
			part := keys[:min(len(keys), 500)]
			keys = keys[len(part):]
			_, err := tx.ExecContext(ctx, `UPDATE sources SET index_state = 'ok'
				WHERE index_state = 'pending'
				AND sid IN (SELECT k.sid FROM json_each(?1) j CROSS JOIN chunks k ON `+holdsKey("k", "j.value")+`)
				AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.sid = sources.sid
					AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = ?2 AND v.vkey = c.vkey))
				AND EXISTS (SELECT 1 FROM spaces WHERE name = ?2 AND is_read)`, jsonArray(part), space)
			if err != nil {
				return fmt.Errorf("settle index states: %w", err)
			}
		}
	}
	return nil
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
	rows, err := db.ro.QueryContext(ctx, `SELECT c.id, c.vkey, t.text, t.header FROM chunks c JOIN chunk_texts t ON t.id = c.id
		WHERE c.id > ?
		AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = ? AND v.vkey = c.vkey)
		AND NOT EXISTS (SELECT 1 FROM chunks e WHERE e.hash = c.hash AND e.vkey = c.vkey AND e.id < c.id)
		ORDER BY c.id LIMIT ?`, after, space, limit)
	if err != nil {
		return nil, db.fail(ctx, err, "missing vectors")
	}
	defer rows.Close()
	var out []recall.PendingText
	for rows.Next() {
		var p recall.PendingText
		if err := rows.Scan(&p.ChunkID, &p.Key, &p.Text, &p.Header); err != nil {
			return nil, db.fail(ctx, err, "missing vectors")
		}
		out = append(out, p)
	}
	return out, db.fail(ctx, rows.Err(), "missing vectors")
}

func (db *DB) spaceExists(ctx context.Context, space string) error {
	var n int
	if err := db.ro.QueryRowContext(ctx, `SELECT count(*) FROM spaces WHERE name = ?`, space).Scan(&n); err != nil {
		return db.fail(ctx, err, "read space")
	}
	if n == 0 {
		return noSpace(space)
	}
	return nil
}

// SetRepairCursor records how far repair got in a space.
func (db *DB) SetRepairCursor(ctx context.Context, space string, chunkID int64) error {
	return db.writeTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE spaces SET repair_cursor = ? WHERE name = ?`, chunkID, space)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
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
	rows, err := db.ro.QueryContext(ctx, `SELECT vkey, vec FROM vectors
		WHERE space = ? AND vkey IN (SELECT value FROM json_each(?))`, space, jsonArray(keys))
	if err != nil {
		return nil, db.fail(ctx, err, "read vectors")
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		var b []byte
		if err := rows.Scan(&h, &b); err != nil {
			return nil, db.fail(ctx, err, "read vectors")
		}
		v, err := decodeVec(b)
		if err != nil {
			return nil, fmt.Errorf("vector %s in %s: %w", h, space, err)
		}
		out[h] = v
	}
	return out, db.fail(ctx, rows.Err(), "read vectors")
}

// ScanVectors calls fn for every chunk with a vector in the space, in chunk
// id order, streaming rows so the vectors are never all in memory at once.
// fn runs while a read connection is held.
func (db *DB) ScanVectors(ctx context.Context, space string, fn func(c recall.IndexedChunk, vec []float32) error) error {
	if err := db.spaceExists(ctx, space); err != nil {
		return err
	}
	rows, err := db.ro.QueryContext(ctx, `SELECT `+indexedChunkCols+`, v.vec FROM chunks c
		CROSS JOIN vectors v ON v.space = ? AND v.vkey = c.vkey
		JOIN sources s ON s.sid = c.sid ORDER BY c.id`, space)
	if err != nil {
		return db.fail(ctx, err, "scan vectors")
	}
	defer rows.Close()
	for rows.Next() {
		var b []byte
		c, err := scanIndexedChunk(rows, &b)
		if err != nil {
			return db.fail(ctx, err, "scan vectors")
		}
		v, err := decodeVec(b)
		if err != nil {
			return fmt.Errorf("vector %s in %s: %w", c.VectorKey, space, err)
		}
		if err := fn(c, v); err != nil {
			return err
		}
	}
	return db.fail(ctx, rows.Err(), "scan vectors")
}

// StreamVectors calls fn for every chunk with a vector in the space, in the
// order the vectors are stored. It reads, in one read transaction, the
// sources' attributes and every chunk's text hash and vector key first
// (the hashes alone took about 14 MB of heap at 100,000 chunks), then the
// vectors in one sequential pass, handing each to the chunks holding its
// key: joined in SQL, each row's lookups of its chunk and source cost more
// than reading the vector (1.5 s against 0.65 s in all at 100,000 chunks),
// and ScanVectors' chunk id order looks every
// vector up. SQLite reads the vectors on a goroutine of its own, copying
// them into batches that are recycled, while this one decodes each (into
// one buffer, reused for the next) and calls fn for its chunks.
func (db *DB) StreamVectors(ctx context.Context, space string, fn func(c recall.IndexedChunk, vec []float32) error) error {
	if err := db.spaceExists(ctx, space); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tx, err := db.ro.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return db.fail(ctx, err, "scan vectors")
	}
	defer tx.Rollback()
	holders, err := keyHolders(ctx, tx)
	if err != nil {
		return db.fail(ctx, err, "scan vectors")
	}

	const (
		batchRows = 64
		batches   = 4
	)
	type batch struct {
		keys  []string
		blobs []byte
		ends  []int // where each vector's blob ends in blobs
		err   error
	}
	full, free := make(chan *batch, batches), make(chan *batch, batches)
	for range batches {
		free <- &batch{}
	}
	go func() {
		defer close(full)
		send := func(b *batch) bool {
			select {
			case full <- b:
				return true
			case <-ctx.Done():
				return false
			}
		}
		fail := func(err error) { send(&batch{err: db.fail(ctx, err, "scan vectors")}) }
		rows, err := tx.QueryContext(ctx, `SELECT vkey, vec FROM vectors WHERE space = ?`, space)
		if err != nil {
			fail(err)
			return
		}
		defer rows.Close()
		var b *batch
		for rows.Next() {
			if b == nil {
				select {
				case b = <-free:
				case <-ctx.Done():
					return
				}
				b.keys, b.blobs, b.ends = b.keys[:0], b.blobs[:0], b.ends[:0]
			}
			var key string
			var raw sql.RawBytes
			if err := rows.Scan(&key, &raw); err != nil {
				fail(err)
				return
			}
			if holders.chunks[key] == nil {
				continue // a vector no chunk holds (being deleted)
			}
			b.keys, b.blobs = append(b.keys, key), append(b.blobs, raw...)
			b.ends = append(b.ends, len(b.blobs))
			if len(b.keys) == batchRows {
				if !send(b) {
					return
				}
				b = nil
			}
		}
		if err := rows.Err(); err != nil {
			fail(err)
			return
		}
		if b != nil {
			send(b)
		}
	}()
	defer func() {
		cancel()
		for range full { // the reader has stopped once it closes full
		}
	}()
	var vec []float32
	for b := range full {
		if b.err != nil {
			return b.err
		}
		from := 0
		for i, k := range b.keys {
			if vec, err = decodeVecInto(vec, b.blobs[from:b.ends[i]]); err != nil {
				return fmt.Errorf("vector %s in %s: %w", k, space, err)
			}
			from = b.ends[i]
			for _, ch := range holders.chunks[k] {
				if err := fn(recall.IndexedChunk{ID: ch.id, Hash: ch.hash, VectorKey: k, Source: holders.sources[ch.sid]}, vec); err != nil {
					return err
				}
			}
		}
		free <- b
	}
	return ctx.Err()
}

// holders are the chunks holding each vector key and their sources'
// attributes.
type holders struct {
	chunks  map[string][]chunkRef // by vector key, in chunk id order
	sources map[int64]recall.SourceMeta
}

type chunkRef struct {
	id, sid int64
	hash    string
}

// keyHolders reads every chunk's text hash, vector key and source.
func keyHolders(ctx context.Context, tx *sql.Tx) (holders, error) {
	h := holders{chunks: map[string][]chunkRef{}, sources: map[int64]recall.SourceMeta{}}
	rows, err := tx.QueryContext(ctx, `SELECT sid, id, kind, title, date, owner, category FROM sources`)
	if err != nil {
		return h, err
	}
	defer rows.Close()
	for rows.Next() {
		var sid int64
		var m recall.SourceMeta
		if err := rows.Scan(&sid, &m.ID, &m.Kind, &m.Title, &m.Date, &m.Owner, &m.Category); err != nil {
			return h, err
		}
		h.sources[sid] = m
	}
	if err := rows.Err(); err != nil {
		return h, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT id, hash, vkey, sid FROM chunks ORDER BY id`)
	if err != nil {
		return h, err
	}
	defer rows.Close()
	for rows.Next() {
		var c chunkRef
		var key string
		if err := rows.Scan(&c.id, &c.hash, &key, &c.sid); err != nil {
			return h, err
		}
		h.chunks[key] = append(h.chunks[key], c)
	}
	return h, rows.Err()
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVec(b []byte) ([]float32, error) {
	return decodeVecInto(nil, b)
}

// decodeVecInto is decodeVec reusing dst's memory when it has room.
func decodeVecInto(dst []float32, b []byte) ([]float32, error) {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil, damaged(fmt.Errorf("%w: vector blob of %d bytes", ErrCorrupt, len(b)))
	}
	v := slices.Grow(dst[:0], len(b)/4)[:len(b)/4]
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// holdsKey is the SQL condition that the chunk row aliased c holds the
// vector key the SQL expression key gives: its vkey is the key, looked up
// through the index of text hashes. A key begins with the first
// recall.KeyPrefixLen hex digits of its text's hash (recall.VectorKey), so
// the chunks that may hold it are a range of chunks_hash, and chunks need no
// index of their keys, which a sweep would pay for in every insert (schema
// 10 dropped chunks_vkey). Hashes are lower-case hex, which sorts below 'g'.
func holdsKey(c, key string) string {
	prefix := fmt.Sprintf("substr(%s, 1, %d)", key, recall.KeyPrefixLen)
	return fmt.Sprintf("(%[1]s.hash >= %[2]s AND %[1]s.hash < (%[2]s || 'g') AND %[1]s.vkey = %[3]s)", c, prefix, key)
}
