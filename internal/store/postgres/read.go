package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
)

// querier is what the pool and a transaction share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const sourceCols = `s.id, s.kind, s.vault, s.title, s.date, s.owner, s.category, s.content_hash,
	s.size, s.mtime, s.chunk_count, s.body, s.index_state, s.created_at, s.updated_at, s.reading, COALESCE(s.zone, '')`

func scanSource(row pgx.Row) (recall.Source, error) {
	var s recall.Source
	var created, updated int64
	if err := row.Scan(&s.ID, &s.Kind, &s.Vault, &s.Title, &s.Date, &s.Owner, &s.Category, &s.ContentHash,
		&s.Size, &s.MTime, &s.ChunkCount, &s.Body, &s.IndexState, &created, &updated, &s.Reading, &s.Zone); err != nil {
		return recall.Source{}, err
	}
	s.CreatedAt = time.Unix(0, created).UTC()
	s.UpdatedAt = time.Unix(0, updated).UTC()
	return s, nil
}

func collectSource(r pgx.CollectableRow) (recall.Source, error) { return scanSource(r) }

// Source returns a source's metadata and body; ENOTFOUND when absent.
func (db *DB) Source(ctx context.Context, id string) (recall.Source, error) {
	if unstorable(id) { // no source can have it
		return recall.Source{}, recall.Errorf(recall.ENOTFOUND, "no source %q", id)
	}
	s, err := scanSource(db.pool.QueryRow(ctx, `SELECT `+sourceCols+` FROM sources s WHERE s.id = $1 AND `+store.ListedSQL, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return recall.Source{}, recall.Errorf(recall.ENOTFOUND, "no source %q", id)
	}
	return s, db.fail(ctx, err, "read source %q", id)
}

// Manifest returns the sweep state of every source of a kind in a vault.
func (db *DB) Manifest(ctx context.Context, kind recall.Kind, vault string) (map[string]recall.SourceState, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, size, mtime, content_hash, reading, COALESCE(zone, '`+recall.ZoneUnknown+`'), chunk_count, updated_at FROM sources WHERE kind = $1 AND vault = $2`,
		string(kind), vault)
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
	return column[string](ctx, db, "read vaults", `SELECT DISTINCT vault FROM sources WHERE kind = $1 ORDER BY vault`, string(kind))
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
	var a args
	where, err := filterSQL(opts.Filter, "s", &a)
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
	rows, err := db.pool.Query(ctx, `SELECT `+sourceCols+` FROM sources s WHERE `+where+` AND `+store.ListedSQL+
		` AND s.id > `+a.add(after)+` ORDER BY s.id LIMIT `+a.add(limit+1), a...)
	if err != nil {
		return nil, "", db.fail(ctx, err, "list sources")
	}
	page, err := pgx.CollectRows(rows, collectSource)
	if err != nil {
		return nil, "", db.fail(ctx, err, "list sources")
	}
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = store.EncodeCursor(page[limit-1].ID)
	}
	return page, next, nil
}

const storedChunkCols = `c.id, c.idx, c.text, c.header, c.hash, c.mid_word,
	s.id, s.kind, s.title, s.date, s.owner, s.category`

const storedChunkFrom = ` FROM chunks c JOIN sources s ON s.sid = c.sid`

func scanStoredChunk(r pgx.CollectableRow) (recall.StoredChunk, error) {
	var c recall.StoredChunk
	m := &c.Source
	err := r.Scan(&c.ID, &c.Index, &c.Text, &c.Header, &c.Hash, &c.MidWord,
		&m.ID, &m.Kind, &m.Title, &m.Date, &m.Owner, &m.Category)
	return c, err
}

// Chunks returns a source's chunks with from <= index <= to, in order;
// ENOTFOUND when the source does not exist.
func (db *DB) Chunks(ctx context.Context, source string, from, to int) ([]recall.StoredChunk, error) {
	if unstorable(source) { // as in Source
		return nil, recall.Errorf(recall.ENOTFOUND, "no source %q", source)
	}
	rows, err := db.pool.Query(ctx, `SELECT `+storedChunkCols+storedChunkFrom+
		` WHERE s.id = $1 AND c.idx BETWEEN $2 AND $3 ORDER BY c.idx`, source, from, to)
	if err != nil {
		return nil, db.fail(ctx, err, "read chunks of %q", source)
	}
	cs, err := pgx.CollectRows(rows, scanStoredChunk)
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
	rows, err := db.pool.Query(ctx, `SELECT `+storedChunkCols+storedChunkFrom+` WHERE c.id = ANY($1)`, ids)
	if err != nil {
		return nil, db.fail(ctx, err, "read chunks")
	}
	cs, err := pgx.CollectRows(rows, scanStoredChunk)
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

// scanPage is how many sources Export reads per statement.
const scanPage = 512

// scanChunkPage is how many chunks ScanChunks and ScanVectors read per
// statement: pages of a few MB (a chunk's text, or its vector of a few
// 384-dim units), few enough statements that their round trips do not
// count.
const scanChunkPage = 1024

// scanPages calls fn for every item of the pages read returns, in order.
// read returns the page after the key after, the key of its last row
// (which need not be an item) and whether more may follow. Pages are read
// one ahead, by another goroutine: the server reads the next page while
// fn works through this one (LoadIndex builds its indexes as fast as the
// server reads, on another core). A connection is held only while a page
// is read, never while fn runs, so fn may use the store; each page is read
// from the committed state at that time, as with one statement per page.
func scanPages[T any](ctx context.Context, read func(ctx context.Context, after int64) ([]T, int64, bool, error), fn func(T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	type result struct {
		page []T
		err  error
	}
	pages := make(chan result)
	go func() {
		defer close(pages)
		after := int64(0)
		for {
			page, last, more, err := read(ctx, after)
			select {
			case pages <- result{page, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || !more {
				return
			}
			after = last
		}
	}()
	// On the way out, stop the reader and wait for it: nothing of the
	// scan outlives the call.
	defer func() {
		cancel()
		for range pages {
		}
	}()
	for r := range pages {
		if r.err != nil {
			return r.err
		}
		for _, it := range r.page {
			if err := fn(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// ScanChunks calls fn for every chunk, with its text and source, in chunk
// id order. It reads pages by id (keyset; see scanPages), so the chunks
// are never all in memory and no connection is held while fn runs: fn may
// use the store. Each page is read from the committed state at that time.
func (db *DB) ScanChunks(ctx context.Context, fn func(recall.StoredChunk) error) error {
	read := func(ctx context.Context, after int64) ([]recall.StoredChunk, int64, bool, error) {
		rows, err := db.pool.Query(ctx, `SELECT `+storedChunkCols+storedChunkFrom+
			` WHERE c.id > $1 ORDER BY c.id LIMIT $2`, after, scanChunkPage)
		if err != nil {
			return nil, 0, false, db.fail(ctx, err, "scan chunks")
		}
		page, err := pgx.CollectRows(rows, scanStoredChunk)
		if err != nil || len(page) == 0 {
			return nil, 0, false, db.fail(ctx, err, "scan chunks")
		}
		return page, page[len(page)-1].ID, len(page) == scanChunkPage, nil
	}
	return scanPages(ctx, read, fn)
}

// SourcesByHash returns, for each hash, the ids of the sources passing f
// that hold a chunk with that text, ordered by id.
func (db *DB) SourcesByHash(ctx context.Context, hashes []string, f recall.Filter) (map[string][]string, error) {
	var a args
	hashArg := a.add(hashes)
	where, err := filterSQL(f, "c", &a)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	if len(hashes) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT c.hash, s.id FROM chunks c JOIN sources s ON s.sid = c.sid
		WHERE c.hash = ANY(`+hashArg+`::text[]) AND `+where+` ORDER BY c.hash, s.id`, a...)
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

func scanIndexedChunk(row pgx.Row, extra ...any) (recall.IndexedChunk, error) {
	var c recall.IndexedChunk
	m := &c.Source
	err := row.Scan(append([]any{&c.ID, &c.Hash, &c.VectorKey, &m.ID, &m.Kind, &m.Title, &m.Date, &m.Owner, &m.Category}, extra...)...)
	return c, err
}

// ChunksByVectorKey returns the chunks whose vector key is one of keys,
// ordered by id.
func (db *DB) ChunksByVectorKey(ctx context.Context, keys []string) ([]recall.IndexedChunk, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT `+indexedChunkCols+` FROM chunks c JOIN sources s ON s.sid = c.sid
		WHERE c.vkey = ANY($1::text[]) ORDER BY c.id`, keys)
	if err != nil {
		return nil, db.fail(ctx, err, "chunks by vector key")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (recall.IndexedChunk, error) { return scanIndexedChunk(r) })
	return out, db.fail(ctx, err, "chunks by vector key")
}

// Export calls fn for every source with all its chunks, ordered by id. It
// reads one snapshot (a REPEATABLE READ transaction) a page of sources at
// a time: writes that commit meanwhile are not seen. fn runs while a
// connection of the pool is held.
func (db *DB) Export(ctx context.Context, fn func(recall.Document) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return db.fail(ctx, err, "export")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	after := ""
	for {
		rows, err := tx.Query(ctx, `SELECT `+sourceCols+`, s.sid FROM sources s WHERE s.id > $1 AND `+store.ListedSQL+` ORDER BY s.id LIMIT $2`, after, scanPage)
		if err != nil {
			return db.fail(ctx, err, "export")
		}
		var docs []recall.Document
		var sids []int64
		for rows.Next() {
			var s recall.Source
			var created, updated, sid int64
			if err := rows.Scan(&s.ID, &s.Kind, &s.Vault, &s.Title, &s.Date, &s.Owner, &s.Category, &s.ContentHash,
				&s.Size, &s.MTime, &s.ChunkCount, &s.Body, &s.IndexState, &created, &updated, &s.Reading, &s.Zone, &sid); err != nil {
				rows.Close()
				return db.fail(ctx, err, "export")
			}
			s.CreatedAt, s.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
			docs = append(docs, recall.Document{Source: s})
			sids = append(sids, sid)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return db.fail(ctx, err, "export")
		}
		if len(docs) == 0 {
			return nil
		}
		at := make(map[int64]int, len(sids))
		for i, sid := range sids {
			at[sid] = i
		}
		crows, err := tx.Query(ctx, `SELECT sid, idx, text, header, hash, mid_word FROM chunks WHERE sid = ANY($1) ORDER BY sid, idx`, sids)
		if err != nil {
			return db.fail(ctx, err, "export")
		}
		for crows.Next() {
			var sid int64
			var c recall.Chunk
			if err := crows.Scan(&sid, &c.Index, &c.Text, &c.Header, &c.Hash, &c.MidWord); err != nil {
				crows.Close()
				return db.fail(ctx, err, "export")
			}
			d := &docs[at[sid]]
			d.Chunks = append(d.Chunks, c)
		}
		crows.Close()
		if err := crows.Err(); err != nil {
			return db.fail(ctx, err, "export")
		}
		for _, d := range docs {
			if err := fn(d); err != nil {
				return err
			}
		}
		if len(docs) < scanPage {
			return nil
		}
		after = docs[len(docs)-1].Source.ID
	}
}

// ChunkIDs returns the id of every chunk, ascending.
func (db *DB) ChunkIDs(ctx context.Context) ([]int64, error) {
	return column[int64](ctx, db, "list chunks", `SELECT id FROM chunks ORDER BY id`)
}

// column returns the one column of a query's rows.
func column[T any](ctx context.Context, db *DB, what, query string, args ...any) ([]T, error) {
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, db.fail(ctx, err, what)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[T])
	return out, db.fail(ctx, err, what)
}
