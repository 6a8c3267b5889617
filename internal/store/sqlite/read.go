package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

const sourceCols = `s.id, s.kind, s.vault, s.title, s.date, s.owner, s.category, s.content_hash,
	s.size, s.mtime, s.chunk_count, s.body, s.index_state, s.created_at, s.updated_at, s.reading, COALESCE(s.zone, '')`

// scanner is what *sql.Row and *sql.Rows share.
type scanner interface{ Scan(dest ...any) error }

func scanSource(sc scanner, extra ...any) (recall.Source, error) {
	var s recall.Source
	var created, updated int64
	dest := append([]any{&s.ID, &s.Kind, &s.Vault, &s.Title, &s.Date, &s.Owner, &s.Category, &s.ContentHash,
		&s.Size, &s.MTime, &s.ChunkCount, &s.Body, &s.IndexState, &created, &updated, &s.Reading, &s.Zone}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return recall.Source{}, err
	}
	s.CreatedAt = time.Unix(0, created).UTC()
	s.UpdatedAt = time.Unix(0, updated).UTC()
	return s, nil
}

// Source returns a source's metadata and body; ENOTFOUND when absent.
func (db *DB) Source(ctx context.Context, id string) (recall.Source, error) {
	s, err := scanSource(db.ro.QueryRowContext(ctx, `SELECT `+sourceCols+` FROM sources s WHERE s.id = ? AND `+store.ListedSQL, id))
	if err == sql.ErrNoRows {
		return recall.Source{}, recall.Errorf(recall.ENOTFOUND, "no source %q", id)
	}
	return s, db.fail(ctx, err, "read source %q", id)
}

// Manifest returns the sweep state of every source of a kind in a vault.
func (db *DB) Manifest(ctx context.Context, kind recall.Kind, vault string) (map[string]recall.SourceState, error) {
	rows, err := db.ro.QueryContext(ctx,
		`SELECT id, size, mtime, content_hash, reading, COALESCE(zone, '`+recall.ZoneUnknown+`'), chunk_count, updated_at FROM sources WHERE kind = ? AND vault = ?`, kind, vault)
	if err != nil {
		return nil, db.fail(ctx, err, "read manifest")
	}
	defer rows.Close()
	m := map[string]recall.SourceState{}
	for rows.Next() {
		var id string
		var st recall.SourceState
		var updated int64
		if err := rows.Scan(&id, &st.Size, &st.MTime, &st.ContentHash, &st.Reading, &st.Zone, &st.Chunks, &updated); err != nil {
			return nil, db.fail(ctx, err, "read manifest")
		}
		st.UpdatedAt = time.Unix(0, updated).UTC()
		m[id] = st
	}
	return m, db.fail(ctx, rows.Err(), "read manifest")
}

// Vaults returns the vaults the sources of a kind came from, sorted.
func (db *DB) Vaults(ctx context.Context, kind recall.Kind) ([]string, error) {
	return column[string](ctx, db, "read vaults", `SELECT DISTINCT vault FROM sources WHERE kind = ? ORDER BY vault`, kind)
}

// Listing page sizes.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// ListSources pages through the sources matching opts, ordered by id. The
// cursor is the last id of the previous page, so sources written or deleted
// between pages neither repeat nor shift the rest.
func (db *DB) ListSources(ctx context.Context, opts recall.ListOptions) ([]recall.Source, string, error) {
	where, args, err := filterSQL(opts.Filter, "s")
	if err != nil {
		return nil, "", err
	}
	after, err := store.DecodeCursor(opts.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = defaultListLimit
	}
	limit = min(limit, maxListLimit)
	args = append(args, after, limit+1)
	rows, err := db.ro.QueryContext(ctx,
		`SELECT `+sourceCols+` FROM sources s WHERE `+where+` AND `+store.ListedSQL+` AND s.id > ? ORDER BY s.id LIMIT ?`, args...)
	if err != nil {
		return nil, "", db.fail(ctx, err, "list sources")
	}
	defer rows.Close()
	var page []recall.Source
	for rows.Next() {
		s, err := scanSource(rows)
		if err != nil {
			return nil, "", db.fail(ctx, err, "list sources")
		}
		page = append(page, s)
	}
	if err := rows.Err(); err != nil {
		return nil, "", db.fail(ctx, err, "list sources")
	}
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = store.EncodeCursor(page[limit-1].ID)
	}
	return page, next, nil
}

const storedChunkCols = `c.id, c.idx, t.text, t.header, c.hash, c.mid_word,
	s.id, s.kind, s.title, s.date, s.owner, s.category`

const storedChunkFrom = ` FROM chunks c JOIN chunk_texts t ON t.id = c.id JOIN sources s ON s.sid = c.sid`

func scanStoredChunks(rows *sql.Rows) ([]recall.StoredChunk, error) {
	defer rows.Close()
	var cs []recall.StoredChunk
	for rows.Next() {
		var c recall.StoredChunk
		m := &c.Source
		if err := rows.Scan(&c.ID, &c.Index, &c.Text, &c.Header, &c.Hash, &c.MidWord,
			&m.ID, &m.Kind, &m.Title, &m.Date, &m.Owner, &m.Category); err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, rows.Err()
}

// Chunks returns a source's chunks with from <= index <= to, in order;
// ENOTFOUND when the source does not exist.
func (db *DB) Chunks(ctx context.Context, source string, from, to int) ([]recall.StoredChunk, error) {
	rows, err := db.ro.QueryContext(ctx, `SELECT `+storedChunkCols+storedChunkFrom+
		` WHERE s.id = ? AND c.idx BETWEEN ? AND ? ORDER BY c.idx`, source, from, to)
	if err != nil {
		return nil, db.fail(ctx, err, "read chunks of %q", source)
	}
	cs, err := scanStoredChunks(rows)
	if err != nil {
		return nil, db.fail(ctx, err, "read chunks of %q", source)
	}
	if len(cs) == 0 {
		if _, err := db.Source(ctx, source); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// ChunksByID returns the chunks with the given ids in the order given;
// missing ids are left out.
func (db *DB) ChunksByID(ctx context.Context, ids []int64) ([]recall.StoredChunk, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.ro.QueryContext(ctx, `SELECT `+storedChunkCols+storedChunkFrom+
		` WHERE c.id IN (SELECT value FROM json_each(?))`, jsonArray(ids))
	if err != nil {
		return nil, db.fail(ctx, err, "read chunks")
	}
	cs, err := scanStoredChunks(rows)
	if err != nil {
		return nil, db.fail(ctx, err, "read chunks")
	}
	byID := make(map[int64]recall.StoredChunk, len(cs))
	for _, c := range cs {
		byID[c.ID] = c
	}
	out := make([]recall.StoredChunk, 0, len(cs))
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// ScanChunks calls fn for every chunk, with its text and source, in chunk
// id order, streaming rows so the chunks are never all in memory at once.
// fn runs while a read connection is held.
func (db *DB) ScanChunks(ctx context.Context, fn func(recall.StoredChunk) error) error {
	rows, err := db.ro.QueryContext(ctx, `SELECT `+storedChunkCols+storedChunkFrom+` ORDER BY c.id`)
	if err != nil {
		return db.fail(ctx, err, "scan chunks")
	}
	defer rows.Close()
	for rows.Next() {
		var c recall.StoredChunk
		m := &c.Source
		if err := rows.Scan(&c.ID, &c.Index, &c.Text, &c.Header, &c.Hash, &c.MidWord,
			&m.ID, &m.Kind, &m.Title, &m.Date, &m.Owner, &m.Category); err != nil {
			return db.fail(ctx, err, "scan chunks")
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return db.fail(ctx, rows.Err(), "scan chunks")
}

// SourcesByHash returns, for each hash, the ids of the sources passing f
// that hold a chunk with that text, ordered by id.
func (db *DB) SourcesByHash(ctx context.Context, hashes []string, f recall.Filter) (map[string][]string, error) {
	where, args, err := filterSQL(f, "c")
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	if len(hashes) == 0 {
		return out, nil
	}
	rows, err := db.ro.QueryContext(ctx, `SELECT DISTINCT c.hash, s.id FROM chunks c CROSS JOIN sources s ON s.sid = c.sid
		WHERE c.hash IN (SELECT value FROM json_each(?)) AND `+where+` ORDER BY c.hash, s.id`,
		append([]any{jsonArray(hashes)}, args...)...)
	if err != nil {
		return nil, db.fail(ctx, err, "sources by hash")
	}
	defer rows.Close()
	for rows.Next() {
		var h, id string
		if err := rows.Scan(&h, &id); err != nil {
			return nil, db.fail(ctx, err, "sources by hash")
		}
		out[h] = append(out[h], id)
	}
	return out, db.fail(ctx, rows.Err(), "sources by hash")
}

const indexedChunkCols = `c.id, c.hash, c.vkey, s.id, s.kind, s.title, s.date, s.owner, s.category`

func scanIndexedChunk(sc scanner, extra ...any) (recall.IndexedChunk, error) {
	var c recall.IndexedChunk
	m := &c.Source
	err := sc.Scan(append([]any{&c.ID, &c.Hash, &c.VectorKey, &m.ID, &m.Kind, &m.Title, &m.Date, &m.Owner, &m.Category}, extra...)...)
	return c, err
}

// ChunksByVectorKey returns the chunks whose vector key is one of keys,
// ordered by id.
func (db *DB) ChunksByVectorKey(ctx context.Context, keys []string) ([]recall.IndexedChunk, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := db.ro.QueryContext(ctx, `SELECT `+indexedChunkCols+` FROM (SELECT DISTINCT value FROM json_each(?)) k
		CROSS JOIN chunks c ON `+holdsKey("c", "k.value")+` CROSS JOIN sources s ON s.sid = c.sid
		ORDER BY c.id`, jsonArray(keys))
	if err != nil {
		return nil, db.fail(ctx, err, "chunks by vector key")
	}
	defer rows.Close()
	var out []recall.IndexedChunk
	for rows.Next() {
		c, err := scanIndexedChunk(rows)
		if err != nil {
			return nil, db.fail(ctx, err, "chunks by vector key")
		}
		out = append(out, c)
	}
	return out, db.fail(ctx, rows.Err(), "chunks by vector key")
}

// exportQuery reads sources with their chunks, one row per chunk (one row
// with NULL chunk columns for a source without chunks).
const exportQuery = `SELECT ` + sourceCols + `, c.idx, t.text, t.header, c.hash, c.mid_word
	FROM sources s LEFT JOIN chunks c ON c.sid = s.sid LEFT JOIN chunk_texts t ON t.id = c.id`

// scanDocuments groups the rows of exportQuery, ordered by source then
// chunk index, into documents and calls fn for each.
func scanDocuments(rows *sql.Rows, fn func(recall.Document) error) error {
	var cur *recall.Document
	for rows.Next() {
		var (
			idx          sql.NullInt64
			text, header sql.NullString
			hash         sql.NullString
			midWord      sql.NullBool
		)
		s, err := scanSource(rows, &idx, &text, &header, &hash, &midWord)
		if err != nil {
			return err
		}
		if cur != nil && cur.Source.ID != s.ID {
			if err := fn(*cur); err != nil {
				return err
			}
			cur = nil
		}
		if cur == nil {
			cur = &recall.Document{Source: s}
		}
		if idx.Valid {
			cur.Chunks = append(cur.Chunks, recall.Chunk{Index: int(idx.Int64), Text: text.String,
				Header: header.String, Hash: hash.String, MidWord: midWord.Bool})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if cur != nil {
		return fn(*cur)
	}
	return nil
}

// Export calls fn for every source with all its chunks, ordered by id. One
// statement reads one snapshot: writes that commit meanwhile are not seen.
// fn runs while a read connection is held.
func (db *DB) Export(ctx context.Context, fn func(recall.Document) error) error {
	rows, err := db.ro.QueryContext(ctx, exportQuery+` WHERE `+store.ListedSQL+` ORDER BY s.id, c.idx`)
	if err != nil {
		return db.fail(ctx, err, "export")
	}
	defer rows.Close()
	if err := scanDocuments(rows, fn); err != nil {
		return fmt.Errorf("export: %w", db.fail(ctx, err, ""))
	}
	return nil
}
