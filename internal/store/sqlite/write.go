package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/recall-mcp/recall/internal/par"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store"
	"github.com/recall-mcp/recall/internal/textindex"
)

// Write stores the documents and vectors, and removes the sources named in
// remove, in one transaction. See recall.Store. Two documents with the same
// id in one call are refused: the WriteResult could not say which of them
// a chunk id belonged to.
func (db *DB) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	if len(docs) == 0 && len(vecs) == 0 && len(remove) == 0 {
		return recall.WriteResult{}, nil
	}
	if err := store.ValidateWrite(docs, vecs, remove, store.ValidateDocument); err != nil {
		return recall.WriteResult{}, err
	}
	var res recall.WriteResult
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res = recall.WriteResult{}
		w, err := newWriter(ctx, tx)
		if err != nil {
			return err
		}
		defer w.close()
		written, writtenVecs, err := store.Guarded(ctx, docs, vecs, func(id string) (*recall.Source, error) {
			s, err := scanSource(tx.QueryRowContext(ctx, `SELECT `+sourceCols+` FROM sources s WHERE s.id = ? AND `+store.ListedSQL, id))
			if err == sql.ErrNoRows {
				return nil, nil
			}
			return &s, err
		})
		if err != nil {
			return err
		}
		now := time.Now()
		for i := range written {
			if err := w.put(&written[i], now, &res); err != nil {
				return err
			}
		}
		// Vectors are kept only for keys some chunk holds: the chunks first.
		if err := w.flushChunks(); err != nil {
			return err
		}
		if err := putVectors(ctx, tx, writtenVecs); err != nil {
			return err
		}
		removed, err := store.DeleteGuarded(ctx, remove, readToRemove(ctx, tx))
		if err != nil {
			return err
		}
		for _, id := range removed {
			if _, err := w.remove(id, &res); err != nil {
				return err
			}
		}
		if err := w.finish(); err != nil {
			return err
		}
		return settleWritten(ctx, tx, written)
	})
	if err != nil {
		return recall.WriteResult{}, err
	}
	return res, nil
}

// settleWritten gives the documents written the index state the read
// space makes true, when there is one: "ok" when every chunk text has a
// vector there (a sweep that left its texts to repair can meet a text that
// repair, or another file, embedded meanwhile, and no later vector would
// settle the source), else "pending", since repair will embed what it
// lacks. A document written "ok" with vectors for another space (a command
// configured with the next model while reads stay on this one) is pending
// too: the state says what semantic search can find. "skipped" (written by
// a process without an embedder) stays only while the database has no
// vector space at all.
func settleWritten(ctx context.Context, tx *sql.Tx, docs []recall.Document) error {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.Source.ID
	}
	if len(ids) == 0 {
		return nil
	}
	return settleStates(ctx, tx, `id IN (SELECT value FROM json_each(?))`, jsonArray(ids))
}

// readState is the index state the read space makes true of a source:
// "pending" while a chunk has no vector there, else "ok".
const readState = `CASE WHEN EXISTS (SELECT 1 FROM chunks c WHERE c.sid = sources.sid
	AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = (SELECT name FROM spaces WHERE is_read) AND v.vkey = c.vkey))
	THEN 'pending' ELSE 'ok' END`

// settleStates gives the sources scope selects the state the read space
// makes true (readState), writing only those it changes; with no read
// space, it leaves them as they are.
func settleStates(ctx context.Context, tx *sql.Tx, scope string, args ...any) error {
	_, err := tx.ExecContext(ctx, `UPDATE sources SET index_state = `+readState+`
		WHERE `+scope+` AND index_state != `+readState+` AND EXISTS (SELECT 1 FROM spaces WHERE is_read)`, args...)
	if err != nil {
		return fmt.Errorf("settle index states: %w", err)
	}
	return nil
}

// Update reads, calls fn and writes in one IMMEDIATE transaction, so no
// other write can come between the read and the write. fn runs while the
// store's write connection is held: it must not call the store.
func (db *DB) Update(ctx context.Context, id string, fn func(cur *recall.Document) (*recall.Document, error)) (recall.WriteResult, error) {
	var res recall.WriteResult
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res = recall.WriteResult{}
		cur, err := readDocument(ctx, tx, id)
		if err != nil {
			return err
		}
		next, err := fn(cur)
		if err != nil || next == nil {
			return err
		}
		if next.Source.ID != id {
			return recall.Errorf(recall.EINVALID, "update of %q returned a document for %q", id, next.Source.ID)
		}
		if err := store.ValidateDocument(next); err != nil {
			return err
		}
		w, err := newWriter(ctx, tx)
		if err != nil {
			return err
		}
		defer w.close()
		if err := w.put(next, time.Now(), &res); err != nil {
			return err
		}
		if err := w.finish(); err != nil {
			return err
		}
		return settleWritten(ctx, tx, []recall.Document{*next})
	})
	if err != nil {
		return recall.WriteResult{}, err
	}
	return res, nil
}

// Delete removes the sources with their chunks, full-text rows and the
// vectors no remaining chunk uses.
func (db *DB) Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error) {
	var res recall.WriteResult
	n := 0
	err := db.writeTx(ctx, func(tx *sql.Tx) error {
		res, n = recall.WriteResult{}, 0
		w, err := newWriter(ctx, tx)
		if err != nil {
			return err
		}
		defer w.close()
		guarded, err := store.DeleteGuarded(ctx, ids, readToRemove(ctx, tx))
		if err != nil {
			return err
		}
		for _, id := range guarded {
			found, err := w.remove(id, &res)
			if err != nil {
				return err
			}
			if found {
				n++
			}
		}
		return w.finish()
	})
	if err != nil {
		return 0, recall.WriteResult{}, err
	}
	return n, res, nil
}

// readToRemove reads, for a delete guard (store.DeleteGuarded), the
// sources tx holds under ids, archive sources without chunks included.
func readToRemove(ctx context.Context, tx *sql.Tx) func(ids []string) (map[string]*recall.Source, error) {
	return func(ids []string) (map[string]*recall.Source, error) {
		m := make(map[string]*recall.Source, len(ids))
		for _, id := range ids {
			s, err := scanSource(tx.QueryRowContext(ctx, `SELECT `+sourceCols+` FROM sources s WHERE s.id = ?`, id))
			if err == sql.ErrNoRows {
				continue
			}
			if err != nil {
				return nil, err
			}
			m[id] = &s
		}
		return m, nil
	}
}

// remove deletes the source id with its chunks and reports whether it
// existed; the full-text rows and orphaned vectors go at finish.
func (w *writer) remove(id string, res *recall.WriteResult) (bool, error) {
	var sid int64
	err := w.tx.QueryRowContext(w.ctx, `SELECT sid FROM sources WHERE id = ?`, id).Scan(&sid)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	old, err := w.chunksOf(sid)
	if err != nil {
		return false, err
	}
	for _, c := range old {
		if err := w.removeChunk(c, res); err != nil {
			return false, err
		}
	}
	if _, err := w.tx.ExecContext(w.ctx, `DELETE FROM sources WHERE sid = ?`, sid); err != nil {
		return false, err
	}
	return true, nil
}

// writer holds the statements one write transaction repeats per chunk, the
// vector keys whose last chunk it may have removed, and the full-text
// changes, which it makes last: FTS5 flushes the terms it buffers to a new
// index segment whenever another statement of the transaction opens a
// savepoint, so interleaving them with the other writes would leave one tiny
// segment per chunk for the automerger to grind through.
type writer struct {
	ctx context.Context
	tx  *sql.Tx

	getSource, insSource, insFTS *sql.Stmt
	delChunk, delText, delFTS    *sql.Stmt

	// nextID is the id the next new chunk gets. The writer holds the only
	// write transaction, so it numbers chunks itself, after the largest id
	// ever used (ids only grow: see the chunks table), and inserts them in
	// multi-row statements at finish, which costs a fraction of a statement
	// per row with RETURNING.
	nextID    int64
	newChunks []any // insChunkCols values per new chunk, in order
	newTexts  []any // insTextCols values per new chunk
	blocks    map[string]*sql.Stmt

	touched map[string]bool
	ftsDel  []int64
	ftsAdd  []ftsRow
}

const (
	insChunkCols = 11 // id, sid, idx, hash, vkey, mid_word, kind, owner, category, date_lo, date_hi
	insTextCols  = 3  // id, text, header
	// rowsPerInsert bounds one multi-row INSERT: 64 rows of 11 values stay
	// far under SQLite's limit on bound parameters.
	rowsPerInsert = 64
)

// ftsRow is a full-text row to insert: the chunk's index text is made at
// finish (or taken from Chunk.IndexText when the caller made it).
type ftsRow struct {
	id    int64
	title string // index text of the title column (ftsTitle)
	chunk *recall.Chunk
}

// ftsTitle is the index text of a source's title column.
func ftsTitle(title, date string) string {
	return textindex.IndexText(textindex.TitleText(title, date))
}

func newWriter(ctx context.Context, tx *sql.Tx) (*writer, error) {
	w := &writer{ctx: ctx, tx: tx, touched: map[string]bool{}, blocks: map[string]*sql.Stmt{}}
	err := tx.QueryRowContext(ctx, `SELECT max(
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0),
		coalesce((SELECT max(id) FROM chunks), 0)) + 1`).Scan(&w.nextID)
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&w.getSource, `SELECT sid, kind, title, date, owner, category, created_at FROM sources WHERE id = ?`},
		{&w.insSource, `INSERT INTO sources (kind, vault, title, date, date_lo, date_hi,
			owner, category, content_hash, size, mtime, chunk_count, body, index_state, created_at, updated_at, text_bytes, reading, zone, id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING sid`},
		{&w.insFTS, `INSERT INTO chunks_fts (rowid, title, body) VALUES (?, ?, ?)`},
		{&w.delChunk, `DELETE FROM chunks WHERE id = ?`},
		{&w.delText, `DELETE FROM chunk_texts WHERE id = ?`},
		{&w.delFTS, `DELETE FROM chunks_fts WHERE rowid = ?`},
	} {
		st, err := tx.PrepareContext(ctx, p.query)
		if err != nil {
			w.close()
			return nil, err
		}
		*p.dst = st
	}
	return w, nil
}

func (w *writer) close() {
	for _, st := range []*sql.Stmt{w.getSource, w.insSource, w.insFTS, w.delChunk, w.delText, w.delFTS} {
		if st != nil {
			st.Close()
		}
	}
	for _, st := range w.blocks {
		st.Close()
	}
}

// insertRows inserts the rows held in vals (cols values each, in the
// order of the column list) into table, rowsPerInsert rows per statement.
func (w *writer) insertRows(table, columns string, cols int, vals []any) error {
	for len(vals) > 0 {
		n := min(len(vals)/cols, rowsPerInsert)
		key := fmt.Sprintf("%s/%d", table, n)
		st := w.blocks[key]
		if st == nil {
			row := "(?" + strings.Repeat(", ?", cols-1) + ")"
			q := "INSERT INTO " + table + " (" + columns + ") VALUES " + row + strings.Repeat(", "+row, n-1)
			var err error
			if st, err = w.tx.PrepareContext(w.ctx, q); err != nil {
				return err
			}
			w.blocks[key] = st
		}
		if _, err := st.ExecContext(w.ctx, vals[:n*cols]...); err != nil {
			return err
		}
		vals = vals[n*cols:]
	}
	return nil
}

type storedChunk struct {
	id      int64
	idx     int
	hash    string
	vkey    string
	midWord bool
}

func (w *writer) chunksOf(sid int64) ([]storedChunk, error) {
	rows, err := w.tx.QueryContext(w.ctx,
		`SELECT id, idx, hash, vkey, mid_word FROM chunks WHERE sid = ? ORDER BY idx`, sid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cs []storedChunk
	for rows.Next() {
		var c storedChunk
		if err := rows.Scan(&c.id, &c.idx, &c.hash, &c.vkey, &c.midWord); err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, rows.Err()
}

// put writes one document, replacing the source with its id. Chunks whose
// index, text and header (so their vector key) are unchanged keep their
// row, id and full-text entry; the others are deleted and inserted under
// new ids, so that the WriteResult tells the vector index of a new key.
// When the source attributes
// that chunks carry (into the vector index, the title column and their own
// filter columns: title, date, owner, category) change, every chunk gets a
// new id, so that the WriteResult tells the in-memory index to drop the
// stale ones and no copy of the old attributes remains.
func (w *writer) put(d *recall.Document, now time.Time, res *recall.WriteResult) error {
	s := d.Source
	lo, hi, dated := recall.DateRange(s.Date)
	var dateLo, dateHi any
	if dated {
		dateLo, dateHi = lo, hi
	}
	created, updated := s.CreatedAt, s.UpdatedAt
	if updated.IsZero() {
		updated = now
	}

	var (
		sid     int64
		old     recall.SourceMeta
		oldCrt  int64
		existed = true
	)
	err := w.getSource.QueryRowContext(w.ctx, s.ID).
		Scan(&sid, &old.Kind, &old.Title, &old.Date, &old.Owner, &old.Category, &oldCrt)
	switch {
	case err == sql.ErrNoRows:
		existed = false
	case err != nil:
		return err
	case old.Kind != s.Kind:
		return recall.Errorf(recall.ECONFLICT, "source %q exists as %s; it cannot be written as %s", s.ID, old.Kind, s.Kind)
	}
	if created.IsZero() {
		created = now
		if existed {
			created = time.Unix(0, oldCrt)
		}
	}
	// text_bytes is what the source holds as chunk text: stats add it up,
	// where size is the file's (shared by every conversation of an export).
	textBytes := 0
	for _, c := range d.Chunks {
		textBytes += len(c.Text)
	}
	cols := []any{s.Kind, s.Vault, s.Title, s.Date, dateLo, dateHi, s.Owner, s.Category,
		s.ContentHash, s.Size, s.MTime, len(d.Chunks), s.Body, s.IndexState, created.UnixNano(), updated.UnixNano(), textBytes, s.Reading, s.Zone}
	if existed {
		_, err = w.tx.ExecContext(w.ctx, `UPDATE sources SET kind = ?, vault = ?, title = ?, date = ?, date_lo = ?, date_hi = ?,
			owner = ?, category = ?, content_hash = ?, size = ?, mtime = ?, chunk_count = ?, body = ?, index_state = ?,
			created_at = ?, updated_at = ?, text_bytes = ?, reading = ?, zone = ? WHERE sid = ?`, append(cols, sid)...)
	} else {
		err = w.insSource.QueryRowContext(w.ctx, append(cols, s.ID)...).Scan(&sid)
	}
	if err != nil {
		return fmt.Errorf("write source %q: %w", s.ID, err)
	}

	meta := recall.SourceMeta{ID: s.ID, Kind: s.Kind, Title: s.Title, Date: s.Date, Owner: s.Owner, Category: s.Category}
	var prev []storedChunk
	if existed {
		if prev, err = w.chunksOf(sid); err != nil {
			return err
		}
	}
	old.ID = s.ID
	sameMeta := existed && old == meta
	keep := make([]bool, len(d.Chunks))
	keys := make([]string, len(d.Chunks))
	for i, c := range d.Chunks {
		keys[i] = c.VectorKey()
	}
	for _, p := range prev {
		if sameMeta && p.idx < len(d.Chunks) && d.Chunks[p.idx].Hash == p.hash && keys[p.idx] == p.vkey {
			keep[p.idx] = true
			if c := d.Chunks[p.idx]; c.MidWord != p.midWord {
				if _, err := w.tx.ExecContext(w.ctx, `UPDATE chunks SET mid_word = ? WHERE id = ?`, c.MidWord, p.id); err != nil {
					return err
				}
			}
			continue
		}
		if err := w.removeChunk(p, res); err != nil {
			return err
		}
	}
	title := ftsTitle(s.Title, s.Date)
	for i := range d.Chunks {
		c := &d.Chunks[i]
		if keep[i] {
			continue
		}
		id := w.nextID
		w.nextID++
		w.newChunks = append(w.newChunks, id, sid, i, c.Hash, keys[i], c.MidWord, s.Kind, s.Owner, s.Category, dateLo, dateHi)
		w.newTexts = append(w.newTexts, id, c.Text, c.Header)
		w.ftsAdd = append(w.ftsAdd, ftsRow{id, title, c})
		res.Added = append(res.Added, recall.IndexedChunk{ID: id, Hash: c.Hash, VectorKey: keys[i], Source: meta})
	}
	return nil
}

func (w *writer) removeChunk(c storedChunk, res *recall.WriteResult) error {
	w.ftsDel = append(w.ftsDel, c.id)
	for _, st := range []*sql.Stmt{w.delText, w.delChunk} {
		if _, err := st.ExecContext(w.ctx, c.id); err != nil {
			return fmt.Errorf("delete chunk %d: %w", c.id, err)
		}
	}
	w.touched[c.vkey] = true
	res.Removed = append(res.Removed, c.id)
	return nil
}

// finish deletes the vectors of removed chunks whose key no chunk holds any
// more, keeping those another chunk still shares, then makes the
// full-text changes.
func (w *writer) finish() error {
	if err := w.flushChunks(); err != nil {
		return err
	}
	if err := w.dropOrphanVectors(); err != nil {
		return err
	}
	for _, id := range w.ftsDel {
		if _, err := w.delFTS.ExecContext(w.ctx, id); err != nil {
			return fmt.Errorf("delete full-text row %d: %w", id, err)
		}
	}
	// The index text is pure work on each chunk: compute what callers did
	// not on every core rather than one at a time.
	bodies := make([]string, len(w.ftsAdd))
	parallel(len(bodies), func(i int) {
		if c := w.ftsAdd[i].chunk; c.IndexText != "" {
			bodies[i] = c.IndexText
		} else {
			bodies[i] = textindex.IndexText(c.Text)
		}
	})
	for i, r := range w.ftsAdd {
		if _, err := w.insFTS.ExecContext(w.ctx, r.id, r.title, bodies[i]); err != nil {
			return fmt.Errorf("index chunk %d: %w", r.id, err)
		}
	}
	return nil
}

// flushChunks inserts the chunk rows put has numbered so far.
func (w *writer) flushChunks() error {
	if err := w.insertRows("chunks", "id, sid, idx, hash, vkey, mid_word, kind, owner, category, date_lo, date_hi",
		insChunkCols, w.newChunks); err != nil {
		return fmt.Errorf("write chunks: %w", err)
	}
	if err := w.insertRows("chunk_texts", "id, text, header", insTextCols, w.newTexts); err != nil {
		return fmt.Errorf("write chunk texts: %w", err)
	}
	w.newChunks, w.newTexts = w.newChunks[:0], w.newTexts[:0]
	return nil
}

// parallel calls f(0..n-1) spread over GOMAXPROCS goroutines (one for a
// small batch, where starting goroutines costs more than it saves).
func parallel(n int, f func(i int)) {
	par.For(min(runtime.GOMAXPROCS(0), n/16+1), n, func(_, i int) { f(i) })
}

func (w *writer) dropOrphanVectors() error {
	if len(w.touched) == 0 {
		return nil
	}
	keys := make([]string, 0, len(w.touched))
	for k := range w.touched {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	_, err := w.tx.ExecContext(w.ctx, `DELETE FROM vectors WHERE (space, vkey) IN (
		SELECT sp.name, j.value FROM json_each(?) j CROSS JOIN spaces sp
		WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE `+holdsKey("c", "j.value")+`))`, jsonArray(keys))
	if err != nil {
		return fmt.Errorf("delete orphan vectors: %w", err)
	}
	// A refusal goes with its text too (a changed text has another key).
	// Only a refused key's chunks are looked up (refusals are few).
	_, err = w.tx.ExecContext(w.ctx, `DELETE FROM refusals WHERE vkey IN (SELECT value FROM json_each(?))
		AND NOT EXISTS (SELECT 1 FROM chunks c WHERE `+holdsKey("c", "refusals.vkey")+`)`, jsonArray(keys))
	if err != nil {
		return fmt.Errorf("delete orphan refusals: %w", err)
	}
	return nil
}

// readDocument returns the document with the given id, nil when absent.
func readDocument(ctx context.Context, q querier, id string) (*recall.Document, error) {
	rows, err := q.QueryContext(ctx, exportQuery+` WHERE s.id = ? ORDER BY c.idx`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var doc *recall.Document
	err = scanDocuments(rows, func(d recall.Document) error {
		doc = &d
		return nil
	})
	return doc, err
}
