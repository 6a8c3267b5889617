package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/par"
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
	if err := store.ValidateWrite(docs, vecs, remove, ValidateDocument); err != nil {
		return recall.WriteResult{}, err
	}
	var res recall.WriteResult
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		res = recall.WriteResult{}
		written, writtenVecs, err := store.Guarded(ctx, docs, vecs, func(id string) (*recall.Source, error) {
			s, err := scanSource(tx.QueryRow(ctx, `SELECT `+sourceCols+` FROM sources s WHERE s.id = $1 AND `+store.ListedSQL, id))
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, nil
			}
			return &s, err
		})
		if err != nil {
			return err
		}
		w := newWriter(ctx, tx)
		ptrs := make([]*recall.Document, len(written))
		for i := range written {
			ptrs[i] = &written[i]
		}
		if err := w.put(ptrs, time.Now(), &res); err != nil {
			return err
		}
		// Vectors are kept only for texts some chunk holds: the chunks first.
		if err := w.flushChunks(&res); err != nil {
			return err
		}
		if err := putVectors(ctx, tx, writtenVecs); err != nil {
			return err
		}
		if len(remove) > 0 {
			if _, err := w.remove(remove, &res); err != nil {
				return err
			}
		}
		if err := w.finish(&res); err != nil {
			return err
		}
		return settleWritten(ctx, tx, written)
	})
	if err != nil {
		return recall.WriteResult{}, err
	}
	return res, nil
}

// ValidateDocument is store.ValidateDocument plus what PostgreSQL's text type
// cannot hold: NUL characters and invalid UTF-8 anywhere, chunk texts
// included (SQLite stores such bytes as they are).
func ValidateDocument(d *recall.Document) error {
	if err := store.ValidateDocument(d); err != nil {
		return err
	}
	s := &d.Source
	for _, f := range []string{s.ID, s.Title, s.Owner, s.Category, s.Vault, s.Body, s.ContentHash, s.Date} {
		if unstorable(f) {
			return recall.Errorf(recall.EINVALID, "source %q: a field holds a NUL character or invalid UTF-8, which PostgreSQL cannot store", s.ID)
		}
	}
	for i, c := range d.Chunks {
		if unstorable(c.Text) || unstorable(c.Header) {
			return recall.Errorf(recall.EINVALID, "source %q: chunk %d holds a NUL character or invalid UTF-8, which PostgreSQL cannot store", s.ID, i)
		}
	}
	return nil
}

// settleWritten gives the documents written the index state the read
// space makes true, when there is one: "ok" when every chunk text has a
// vector there, else "pending", since repair will embed what it lacks (a
// document written "ok" with vectors for another space too: the state says
// what semantic search can find). "skipped" stays only while the database
// has no vector space.
func settleWritten(ctx context.Context, tx pgx.Tx, docs []recall.Document) error {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.Source.ID
	}
	if len(ids) == 0 {
		return nil
	}
	return settleStates(ctx, tx, settleWrittenScope, ids)
}

// settleSQL is settleStates's statement.
func settleSQL(scope string) string {
	return `UPDATE sources SET index_state = ` + readState + `
		WHERE ` + scope + ` AND index_state != ` + readState + ` AND EXISTS (SELECT 1 FROM spaces WHERE is_read)`
}

// settleWrittenScope is the sources settleWritten settles.
const settleWrittenScope = `id = ANY($1::text[])`

// readState is the index state the read space makes true of a source:
// "pending" while a chunk has no vector there, else "ok". It looks up the
// source's chunks, and each one's vector, by their indexes. OFFSET 0 keeps
// each EXISTS a subquery run for its row (PostgreSQL neither hashes it nor
// turns it into a join): otherwise the plan PostgreSQL caches for a
// statement that settles a write's sources (a generic plan) read every
// chunk and every vector of the read space into hash tables, on every
// write (TestWritePlansProbe).
const readState = `CASE WHEN EXISTS (SELECT 1 FROM chunks c WHERE c.sid = sources.sid
	AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = (SELECT name FROM spaces WHERE is_read)
		AND v.vkey = c.vkey AND v.unit = 0 OFFSET 0) OFFSET 0)
	THEN 'pending' ELSE 'ok' END`

// settleStates gives the sources scope selects the state the read space
// makes true (readState), writing only those it changes; with no read
// space, it leaves them as they are.
func settleStates(ctx context.Context, tx pgx.Tx, scope string, args ...any) error {
	_, err := tx.Exec(ctx, settleSQL(scope), args...)
	if err != nil {
		return fmt.Errorf("settle index states: %w", err)
	}
	return nil
}

// Update reads, calls fn and writes in one transaction holding the writer
// lock, so no other write can come between the read and the write, even
// when the source does not exist yet. fn runs while a connection of the
// pool is held and must not write to the store (that would wait for the
// lock it holds).
func (db *DB) Update(ctx context.Context, id string, fn func(cur *recall.Document) (*recall.Document, error)) (recall.WriteResult, error) {
	var res recall.WriteResult
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
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
		if err := ValidateDocument(next); err != nil {
			return err
		}
		w := newWriter(ctx, tx)
		if err := w.put([]*recall.Document{next}, time.Now(), &res); err != nil {
			return err
		}
		if err := w.finish(&res); err != nil {
			return err
		}
		return settleWritten(ctx, tx, []recall.Document{*next})
	})
	if err != nil {
		return recall.WriteResult{}, err
	}
	return res, nil
}

// Delete removes the sources with their chunks, full-text postings and the
// vectors no remaining chunk uses, in a few statements however many.
func (db *DB) Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error) {
	var res recall.WriteResult
	n := 0
	err := db.writeTx(ctx, func(tx pgx.Tx) error {
		res, n = recall.WriteResult{}, 0
		w := newWriter(ctx, tx)
		var err error
		if n, err = w.remove(ids, &res); err != nil {
			return err
		}
		return w.finish(&res)
	})
	if err != nil {
		return 0, recall.WriteResult{}, err
	}
	return n, res, nil
}

// remove deletes the sources ids with their chunks, in a few statements
// however many, and returns how many existed; the postings and orphaned
// vectors go at finish.
func (w *writer) remove(ids []string, res *recall.WriteResult) (int, error) {
	var storable []string
	for _, id := range ids {
		if !unstorable(id) { // else no source has it
			storable = append(storable, id)
		}
	}
	storable, err := store.DeleteGuarded(w.ctx, storable, func(ids []string) (map[string]*recall.Source, error) {
		rows, err := w.tx.Query(w.ctx, `SELECT `+sourceCols+` FROM sources s WHERE s.id = ANY($1::text[])`, ids)
		if err != nil {
			return nil, err
		}
		got, err := pgx.CollectRows(rows, collectSource)
		if err != nil {
			return nil, err
		}
		m := make(map[string]*recall.Source, len(got))
		for i := range got {
			m[got[i].ID] = &got[i]
		}
		return m, nil
	})
	if err != nil {
		return 0, err
	}
	if len(storable) == 0 {
		return 0, nil
	}
	var b pgx.Batch
	b.Queue(`SELECT id, sid FROM sources WHERE id = ANY($1::text[])`, storable)
	b.Queue(chunksOfIDsSQL, storable)
	br := w.tx.SendBatch(w.ctx, &b)
	sidOf := map[string]int64{}
	rows, err := br.Query()
	if err == nil {
		for rows.Next() {
			var id string
			var sid int64
			if err = rows.Scan(&id, &sid); err != nil {
				break
			}
			sidOf[id] = sid
		}
		rows.Close()
		err = cmp.Or(err, rows.Err())
	}
	chunks := map[int64][]storedChunk{}
	if err == nil {
		chunks, err = scanStoredChunks(br.Query())
	}
	if err = cmp.Or(err, br.Close()); err != nil {
		return 0, fmt.Errorf("read sources to delete: %w", err)
	}
	// In the order given, as one statement each did.
	var gone []storedChunk
	var sids []int64
	for _, id := range storable {
		sid, ok := sidOf[id]
		if !ok {
			continue
		}
		delete(sidOf, id) // an id given twice is deleted once
		gone = append(gone, chunks[sid]...)
		sids = append(sids, sid)
	}
	if err := w.removeChunks(gone, res); err != nil {
		return 0, err
	}
	if len(sids) > 0 {
		if _, err := w.tx.Exec(w.ctx, `DELETE FROM sources WHERE sid = ANY($1::bigint[])`, sids); err != nil {
			return 0, err
		}
	}
	return len(sids), nil
}

// writer collects what one write transaction changes beyond the rows it
// writes at once: new chunks (inserted together by COPY at flushChunks,
// with their postings), the chunks removed (whose postings go at finish),
// the vector keys whose last chunk may be gone, and the changes to the
// document frequencies and counters.
type writer struct {
	ctx context.Context
	tx  pgx.Tx

	pending []pendingChunk
	// The postings of removed chunks, by key, deleted at finish.
	goneTerms [][]byte
	goneIDs   []int64
	touched   map[string]bool

	chunks int   // change in the number of chunks
	length int64 // change in the tokens of all chunks
	dirty  bool  // chunks were added or removed
}

// pendingChunk is a new chunk waiting for its id and for COPY.
type pendingChunk struct {
	added int // its entry in WriteResult.Added
	sid   int64
	src   *recall.Source
	dates [2]any // date_lo, date_hi (nil when undated)
	title string // full-text title text (textindex.TitleText)
	chunk *recall.Chunk
}

func newWriter(ctx context.Context, tx pgx.Tx) *writer {
	return &writer{ctx: ctx, tx: tx, touched: map[string]bool{}}
}

type storedChunk struct {
	id      int64
	idx     int
	hash    string
	vkey    string
	midWord bool
	tokLen  int
}

// storedChunkFields are the columns scanStoredChunks reads after a
// chunk's source id.
const storedChunkFields = `id, idx, hash, vkey, mid_word, tok_len`

// sourcesOfIDsSQL reads what put needs of the stored sources of ids $1.
const sourcesOfIDsSQL = `SELECT id, sid, kind, title, date, owner, category, created_at FROM sources WHERE id = ANY($1::text[])`

// chunksOfSidsSQL reads the chunks of the sources $1 (sids) for
// scanStoredChunks; chunksOfIDsSQL those of the sources $1 (ids).
const (
	chunksOfSidsSQL = `SELECT sid, ` + storedChunkFields + ` FROM chunks WHERE sid = ANY($1::bigint[]) ORDER BY sid, idx`
	chunksOfIDsSQL  = `SELECT sid, ` + storedChunkFields + ` FROM chunks
		WHERE sid = ANY(ARRAY(SELECT sid FROM sources WHERE id = ANY($1::text[]))) ORDER BY sid, idx`
)

// scanStoredChunks reads rows of a chunk's sid and storedChunkFields, by
// source.
func scanStoredChunks(rows pgx.Rows, err error) (map[int64][]storedChunk, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][]storedChunk{}
	for rows.Next() {
		var sid int64
		var c storedChunk
		if err := rows.Scan(&sid, &c.id, &c.idx, &c.hash, &c.vkey, &c.midWord, &c.tokLen); err != nil {
			return nil, err
		}
		out[sid] = append(out[sid], c)
	}
	return out, rows.Err()
}

// put writes documents (distinct ids), replacing the sources with their
// ids. Chunks whose index, text and header (so their vector key) are
// unchanged keep their row, id and postings; the others are deleted and
// inserted under new ids, so that the WriteResult tells the vector index of
// a new key. When the source attributes that chunks carry (title, date,
// owner, category) change, every chunk gets a new id, so that the
// WriteResult tells in-memory indexes to drop the stale ones and no copy of
// the old attributes remains.
//
// However many documents, it costs a few round trips: the stored sources
// are read in one statement, written (and the chunks of those that existed
// read) in one batch, and what changes of their chunks in one more each;
// a statement or two per document had made a sweep's batch of 20 sources
// 40 round trips (TestWriteRoundTrips).
func (w *writer) put(docs []*recall.Document, now time.Time, res *recall.WriteResult) error {
	if len(docs) == 0 {
		return nil
	}
	type stored struct {
		sid     int64
		meta    recall.SourceMeta
		created int64
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.Source.ID
	}
	rows, err := w.tx.Query(w.ctx, sourcesOfIDsSQL, ids)
	if err != nil {
		return fmt.Errorf("read sources: %w", err)
	}
	old := map[string]stored{}
	for rows.Next() {
		var o stored
		m := &o.meta
		if err := rows.Scan(&m.ID, &o.sid, &m.Kind, &m.Title, &m.Date, &m.Owner, &m.Category, &o.created); err != nil {
			rows.Close()
			return fmt.Errorf("read sources: %w", err)
		}
		old[m.ID] = o
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read sources: %w", err)
	}
	var b pgx.Batch
	var existing []int64
	for _, d := range docs {
		s := &d.Source
		o, existed := old[s.ID]
		if existed && o.meta.Kind != s.Kind {
			return recall.Errorf(recall.ECONFLICT, "source %q exists as %s; it cannot be written as %s", s.ID, o.meta.Kind, s.Kind)
		}
		var dates [2]any
		if lo, hi, ok := recall.DateRange(s.Date); ok {
			dates = [2]any{lo, hi}
		}
		created, updated := s.CreatedAt.UnixNano(), s.UpdatedAt.UnixNano()
		switch {
		case !s.CreatedAt.IsZero():
		case existed:
			created = o.created
		default:
			created = now.UnixNano()
		}
		if s.UpdatedAt.IsZero() {
			updated = now.UnixNano()
		}
		textBytes := 0
		for _, c := range d.Chunks {
			textBytes += len(c.Text)
		}
		cols := []any{string(s.Kind), s.Vault, s.Title, s.Date, dates[0], dates[1], s.Owner, s.Category,
			s.ContentHash, s.Size, s.MTime, len(d.Chunks), s.Body, s.IndexState, created, updated, textBytes, s.Reading, s.Zone}
		if existed {
			existing = append(existing, o.sid)
			b.Queue(`UPDATE sources SET kind = $1, vault = $2, title = $3, date = $4, date_lo = $5, date_hi = $6,
				owner = $7, category = $8, content_hash = $9, size = $10, mtime = $11, chunk_count = $12, body = $13,
				index_state = $14, created_at = $15, updated_at = $16, text_bytes = $17, reading = $18, zone = $19 WHERE sid = $20`, append(cols, o.sid)...)
		} else {
			b.Queue(`INSERT INTO sources (kind, vault, title, date, date_lo, date_hi,
				owner, category, content_hash, size, mtime, chunk_count, body, index_state, created_at, updated_at, text_bytes, reading, zone, id)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20) RETURNING sid`,
				append(cols, s.ID)...)
		}
	}
	if len(existing) > 0 {
		b.Queue(chunksOfSidsSQL, existing)
	}
	br := w.tx.SendBatch(w.ctx, &b)
	defer br.Close()
	sids := make([]int64, len(docs))
	for i, d := range docs {
		if o, existed := old[d.Source.ID]; existed {
			sids[i] = o.sid
			_, err = br.Exec()
		} else {
			err = br.QueryRow().Scan(&sids[i])
		}
		if err != nil {
			return fmt.Errorf("write source %q: %w", d.Source.ID, err)
		}
	}
	prev := map[int64][]storedChunk{}
	if len(existing) > 0 {
		if prev, err = scanStoredChunks(br.Query()); err != nil {
			return fmt.Errorf("read chunks: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("write sources: %w", err)
	}

	// Which chunks stay, which go and which are new, document by document.
	var gone []storedChunk
	midWord := map[bool][]int64{} // kept chunks whose mid_word changes, by its new value
	type added struct {
		d     int
		chunk int
		key   string
		meta  recall.SourceMeta
		dates [2]any
		title string
	}
	var adds []added
	for i, d := range docs {
		s := &d.Source
		meta := recall.SourceMeta{ID: s.ID, Kind: s.Kind, Title: s.Title, Date: s.Date, Owner: s.Owner, Category: s.Category}
		o, existed := old[s.ID]
		sameMeta := existed && o.meta == meta
		keep := make([]bool, len(d.Chunks))
		keys := make([]string, len(d.Chunks))
		for j, c := range d.Chunks {
			keys[j] = c.VectorKey()
		}
		for _, p := range prev[sids[i]] {
			if sameMeta && p.idx < len(d.Chunks) && d.Chunks[p.idx].Hash == p.hash && keys[p.idx] == p.vkey {
				keep[p.idx] = true
				if c := d.Chunks[p.idx]; c.MidWord != p.midWord {
					midWord[c.MidWord] = append(midWord[c.MidWord], p.id)
				}
				continue
			}
			gone = append(gone, p)
		}
		var dates [2]any
		if lo, hi, ok := recall.DateRange(s.Date); ok {
			dates = [2]any{lo, hi}
		}
		title := textindex.TitleText(s.Title, s.Date)
		for j := range d.Chunks {
			if !keep[j] {
				adds = append(adds, added{i, j, keys[j], meta, dates, title})
			}
		}
	}
	for _, v := range []bool{false, true} {
		if ids := midWord[v]; len(ids) > 0 {
			if _, err := w.tx.Exec(w.ctx, `UPDATE chunks SET mid_word = $1 WHERE id = ANY($2::bigint[])`, v, ids); err != nil {
				return err
			}
		}
	}
	// The old rows go now: a new chunk may take the index of one.
	if err := w.removeChunks(gone, res); err != nil {
		return err
	}
	for _, a := range adds {
		c := &docs[a.d].Chunks[a.chunk]
		w.pending = append(w.pending, pendingChunk{added: len(res.Added), sid: sids[a.d], src: &docs[a.d].Source, dates: a.dates, title: a.title, chunk: c})
		res.Added = append(res.Added, recall.IndexedChunk{Hash: c.Hash, VectorKey: a.key, Source: a.meta})
	}
	return nil
}

// removeChunks deletes chunk rows; their postings go at finish.
func (w *writer) removeChunks(cs []storedChunk, res *recall.WriteResult) error {
	if len(cs) == 0 {
		return nil
	}
	ids := make([]int64, len(cs))
	for i, c := range cs {
		ids[i] = c.id
		w.touched[c.vkey] = true
		w.length -= int64(c.tokLen)
	}
	rows, err := w.tx.Query(w.ctx, `DELETE FROM chunks WHERE id = ANY($1) RETURNING id, terms`, ids)
	if err != nil {
		return fmt.Errorf("delete chunks: %w", err)
	}
	for rows.Next() {
		var id int64
		var terms [][]byte
		if err := rows.Scan(&id, &terms); err != nil {
			rows.Close()
			return fmt.Errorf("delete chunks: %w", err)
		}
		for _, t := range terms {
			w.goneTerms = append(w.goneTerms, t)
			w.goneIDs = append(w.goneIDs, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("delete chunks: %w", err)
	}
	res.Removed = append(res.Removed, ids...)
	w.chunks -= len(cs)
	w.dirty = true
	return nil
}

// flushChunks numbers the pending chunks from the chunk id sequence (under
// the writer lock, so ids commit in ascending order), and inserts them and
// their postings by COPY.
func (w *writer) flushChunks(res *recall.WriteResult) error {
	if len(w.pending) == 0 {
		return nil
	}
	pend := w.pending
	w.pending = nil
	rows, err := w.tx.Query(w.ctx, `SELECT nextval(pg_get_serial_sequence('chunks', 'id')) FROM generate_series(1, $1)`, len(pend))
	if err != nil {
		return fmt.Errorf("number chunks: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("number chunks: %w", err)
	}
	slices.Sort(ids)
	// The terms are pure work on each chunk: make them on every core.
	docs := make([]termDoc, len(pend))
	parallel(len(pend), func(i int) { docs[i] = makeTermDoc(pend[i].title, pend[i].chunk) })

	keyed := keyPostings(docs, ids)
	chunkRows := make([][]any, len(pend))
	for i, p := range pend {
		res.Added[p.added].ID = ids[i]
		d := &docs[i]
		chunkRows[i] = []any{ids[i], p.sid, p.chunk.Index, p.chunk.Hash, res.Added[p.added].VectorKey, p.chunk.MidWord, string(p.src.Kind), p.src.Owner,
			p.src.Category, p.dates[0], p.dates[1], d.titleLen, d.length, p.chunk.Text, p.chunk.Header, keyed.chunkTerms[i]}
		w.length += int64(d.length)
	}
	if _, err := w.tx.CopyFrom(w.ctx, pgx.Identifier{"chunks"},
		[]string{"id", "sid", "idx", "hash", "vkey", "mid_word", "kind", "owner", "category", "date_lo", "date_hi",
			"title_len", "tok_len", "text", "header", "terms"}, pgx.CopyFromRows(chunkRows)); err != nil {
		return fmt.Errorf("write chunks: %w", err)
	}
	// In key order: the postings' index then takes each term's new
	// entries together, one visit to its leaf page, where chunk by chunk
	// every entry goes to another page than the one before (a sweep's
	// batch of 200 chunks is some 40,000 postings of 14,000 terms). The
	// index's upkeep is most of a bulk write's time (BenchmarkWrite).
	posts := keyed.posts
	if _, err := w.tx.CopyFrom(w.ctx, pgx.Identifier{"postings"}, []string{"term", "chunk_id", "tf", "positions"},
		pgx.CopyFromSlice(len(posts), func(i int) ([]any, error) {
			p := posts[i]
			return []any{p.term, p.chunkID, p.tf, p.positions}, nil
		})); err != nil {
		return fmt.Errorf("write full-text postings: %w", err)
	}
	if err := w.applyFreqs(keyed.terms, keyed.df); err != nil {
		return err
	}
	w.chunks += len(pend)
	w.dirty = true
	return nil
}

// posting is a row of the postings table to write.
type posting struct {
	term    []byte
	chunkID int64
	*termPosting
}

// keyedPostings are the postings of new chunks in key order (term, then
// chunk id), with the distinct terms in order, the number of the chunks
// that hold each (their document frequencies' increase), and each chunk's
// terms for its row. A term's bytes are shared by all of them.
type keyedPostings struct {
	posts      []posting
	terms      [][]byte
	df         []int32
	chunkTerms [][][]byte
}

// keyPostings orders the postings of the chunks docs (numbered ids, in
// ascending order) by key: the distinct terms are sorted, and the postings
// counted into place by their term's rank, which keeps each term's in
// chunk order, instead of sorting every posting (some 40,000 for a
// sweep's batch) by its key.
func keyPostings(docs []termDoc, ids []int64) keyedPostings {
	n := 0
	for i := range docs {
		n += len(docs[i].terms)
	}
	// Each posting's term as an index into distinct (one map lookup a
	// posting), then as its rank in order.
	seen := map[string]int32{}
	var distinct []string
	at := make([]int32, 0, n)
	for i := range docs {
		for _, t := range docs[i].terms {
			d, ok := seen[t.term]
			if !ok {
				d = int32(len(distinct))
				seen[t.term] = d
				distinct = append(distinct, t.term)
			}
			at = append(at, d)
		}
	}
	order := make([]int32, len(distinct))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(distinct[a], distinct[b]) })
	rank := make([]int32, len(distinct))
	k := keyedPostings{terms: make([][]byte, len(distinct)), df: make([]int32, len(distinct)),
		posts: make([]posting, n), chunkTerms: make([][][]byte, len(docs))}
	for r, d := range order {
		rank[d] = int32(r)
		k.terms[r] = []byte(distinct[d])
	}
	for p, d := range at {
		at[p] = rank[d]
		k.df[at[p]]++
	}
	// Each term's postings start where the terms before it end.
	next := make([]int32, len(distinct))
	for r := 1; r < len(next); r++ {
		next[r] = next[r-1] + k.df[r-1]
	}
	p := 0
	for i := range docs {
		k.chunkTerms[i] = make([][]byte, len(docs[i].terms))
		for j := range docs[i].terms {
			r := at[p]
			p++
			k.chunkTerms[i][j] = k.terms[r]
			k.posts[next[r]] = posting{k.terms[r], ids[i], &docs[i].terms[j]}
			next[r]++
		}
	}
	return k
}

// applyFreqs adds deltas to the document frequencies of terms (in
// ascending order, without repeats) and drops the terms no chunk holds
// any more.
func (w *writer) applyFreqs(terms [][]byte, dfs []int32) error {
	if len(terms) == 0 {
		return nil
	}
	if _, err := w.tx.Exec(w.ctx, `INSERT INTO terms (term, df) SELECT * FROM unnest($1::bytea[], $2::integer[])
		ON CONFLICT (term) DO UPDATE SET df = terms.df + EXCLUDED.df`, terms, dfs); err != nil {
		return fmt.Errorf("update document frequencies: %w", err)
	}
	// Only a term whose frequency went down can have reached zero.
	var down [][]byte
	for i, d := range dfs {
		if d < 0 {
			down = append(down, terms[i])
		}
	}
	if len(down) == 0 {
		return nil
	}
	if _, err := w.tx.Exec(w.ctx, `DELETE FROM terms WHERE term = ANY($1::bytea[]) AND df <= 0`, down); err != nil {
		return fmt.Errorf("update document frequencies: %w", err)
	}
	return nil
}

// finish inserts what is pending, deletes the removed chunks' postings and
// the vectors of texts no chunk holds any more, and brings the counters up
// to date.
func (w *writer) finish(res *recall.WriteResult) error {
	if err := w.flushChunks(res); err != nil {
		return err
	}
	if len(w.goneIDs) > 0 {
		// Each posting by its key: a probe of the primary key each.
		if _, err := w.tx.Exec(w.ctx, `DELETE FROM postings p
			USING unnest($1::bytea[], $2::bigint[]) AS d(term, chunk_id)
			WHERE p.term = d.term AND p.chunk_id = d.chunk_id`, w.goneTerms, w.goneIDs); err != nil {
			return fmt.Errorf("delete full-text postings: %w", err)
		}
		df := map[string]int32{}
		for _, t := range w.goneTerms {
			df[string(t)]--
		}
		keys := slices.Sorted(maps.Keys(df))
		terms := make([][]byte, len(keys))
		dfs := make([]int32, len(keys))
		for i, k := range keys {
			terms[i], dfs[i] = []byte(k), df[k]
		}
		if err := w.applyFreqs(terms, dfs); err != nil {
			return err
		}
		w.goneTerms, w.goneIDs = nil, nil
	}
	if err := dropOrphanVectors(w.ctx, w.tx, w.touched); err != nil {
		return err
	}
	if !w.dirty {
		return nil
	}
	_, err := w.tx.Exec(w.ctx, `UPDATE counters SET chunks = chunks + $1, total_len = total_len + $2,
		max_chunk_id = (SELECT coalesce(max(id), 0) FROM chunks)`, w.chunks, w.length)
	if err != nil {
		return fmt.Errorf("update counters: %w", err)
	}
	w.chunks, w.length, w.dirty = 0, 0, false
	return nil
}

// dropOrphansSQL deletes the vectors and the refusals of the keys $1 no
// chunk holds, a probe of chunks per key (a refused key's, for refusals).
var dropOrphansSQL = `WITH gone AS (
		DELETE FROM vectors v WHERE v.vkey = ANY($1::text[])
		AND NOT EXISTS (SELECT 1 FROM chunks c WHERE ` + holdsKey("c", "v.vkey") + ` OFFSET 0)
		RETURNING v.space, v.unit),
	unrefused AS (
		DELETE FROM refusals r WHERE r.vkey = ANY($1::text[])
		AND NOT EXISTS (SELECT 1 FROM chunks c WHERE ` + holdsKey("c", "r.vkey") + ` OFFSET 0)),
	counts AS (SELECT space, count(*) AS n FROM gone WHERE unit = 0 GROUP BY space)
	UPDATE spaces sp SET vectors = sp.vectors - counts.n FROM counts WHERE sp.name = counts.space`

// dropOrphanVectors deletes the vectors of the given keys that no chunk
// holds any more, in every space, and counts them out of their spaces.
func dropOrphanVectors(ctx context.Context, tx pgx.Tx, touched map[string]bool) error {
	if len(touched) == 0 {
		return nil
	}
	keys := make([]string, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	_, err := tx.Exec(ctx, dropOrphansSQL, keys)
	if err != nil {
		return fmt.Errorf("delete orphan vectors: %w", err)
	}
	return nil
}

// parallel calls f(0..n-1) spread over GOMAXPROCS goroutines (one for a
// small batch, where starting goroutines costs more than it saves).
func parallel(n int, f func(i int)) {
	par.For(min(runtime.GOMAXPROCS(0), n/16+1), n, func(_, i int) { f(i) })
}

// readDocument returns the document with the given id, nil when absent.
func readDocument(ctx context.Context, q querier, id string) (*recall.Document, error) {
	if unstorable(id) {
		return nil, nil
	}
	src, err := scanSource(q.QueryRow(ctx, `SELECT `+sourceCols+` FROM sources s WHERE s.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := &recall.Document{Source: src}
	rows, err := q.Query(ctx, `SELECT c.idx, c.text, c.header, c.hash, c.mid_word FROM chunks c
		JOIN sources s ON s.sid = c.sid WHERE s.id = $1 ORDER BY c.idx`, id)
	if err != nil {
		return nil, err
	}
	d.Chunks, err = pgx.CollectRows(rows, scanChunk)
	return d, err
}

func scanChunk(r pgx.CollectableRow) (recall.Chunk, error) {
	var c recall.Chunk
	err := r.Scan(&c.Index, &c.Text, &c.Header, &c.Hash, &c.MidWord)
	return c, err
}
