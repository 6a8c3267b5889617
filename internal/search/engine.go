// Package search answers queries over a store: it gathers full-text and
// vector candidates, fuses them, collapses identical passages into one
// result naming every source, and caps results per source. It also owns the
// in-memory vector index of the read space and keeps it in step with every
// write that passes through it.
package search

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lexindex"
	"github.com/recall-mcp/recall/internal/par"
	"github.com/recall-mcp/recall/internal/textindex"
)

// Options configure an Engine.
type Options struct {
	// Embedder embeds queries for the read space; nil means lexical only.
	Embedder recall.Embedder
	// EmbedderOff says that Embedder is nil because the configuration
	// turned embedding off (embedder none), not because no model could be
	// had: a search says so when it falls back to full text.
	EmbedderOff bool
	// SpaceEmbedder, when set, returns the query embedder of a space that
	// another process made the read space (`recall space use`): Follow
	// then loads that space's vectors beside the live indexes and swaps
	// them in with the embedder, so a server switches models without a
	// restart. When it fails, or is nil, the engine keeps the space it has.
	SpaceEmbedder func(ctx context.Context, sp recall.VectorSpace) (recall.Embedder, error)
	// Fusion is one of Fusions ("" means DefaultFusion).
	Fusion string
	// Budget bounds one search (0 means DefaultBudget).
	Budget time.Duration
	// EmbedBudget bounds embedding the query (0 means 2 seconds); past it a
	// hybrid search goes on with full text alone and says so. After a
	// query could not be embedded, searches leave the embedder alone for
	// a while (see breaker).
	EmbedBudget time.Duration
	// Now is the clock of the embedder's outages (nil: time.Now).
	Now func() time.Time
	// MemoryLexical makes LoadIndex also build an in-memory full-text index
	// (internal/lexindex) that ranks plain-word queries by exact BM25 in
	// about a millisecond, where the store's index takes tens at 100,000
	// chunks and ranks only a budget of them. It costs memory and a scan of
	// every chunk at start-up: for servers, not one-off commands.
	MemoryLexical bool
	// ScanVectors makes LoadIndex load no vector index: each search reads
	// the read space's vectors from the store instead (Store.StreamVectors)
	// and scores them exactly as they are read, with the filters applied
	// before the cut as the index applies them. For a command that answers
	// one query, where loading the index costs more than the scan
	// (BENCHMARKS.md); not for processes that answer many. Budget must
	// allow for a scan of every vector.
	ScanVectors bool
}

// DefaultBudget is Options.Budget's default.
const DefaultBudget = 5 * time.Second

// Engine is safe for concurrent use.
type Engine struct {
	store recall.Store
	opt   Options
	brk   breaker // the query embedder's outage

	flightMu sync.Mutex
	flights  map[flightKey]*queryFlight // query embeddings in flight
	joined   func()                     // tests: told under flightMu when a search joins one

	mu sync.RWMutex // orders index updates against searches
	// wmu queues this engine's writers before their transactions begin,
	// not on SQLite's single write connection: handed straight from one
	// writer to the next, that connection would keep the database's write
	// lock taken without a gap; this way it is free while a writer updates
	// the indexes, and another process waiting for it (a cron sweep, a
	// second recall mcp; the store polls for it) gets in. A channel of
	// one, so that a writer waiting its turn still heeds its context.
	wmu    chan struct{}
	space  string          // read space name ("" when there is none)
	emb    recall.Embedder // embeds queries for space (nil: lexical only)
	vx     *unitIndex
	scan   *recall.VectorSpace // with Options.ScanVectors: the read space, when it holds vectors
	lx     *lexindex.Index     // nil unless Options.MemoryLexical and loaded
	loaded bool
	gen    uint64 // counts committed writes (under mu)

	// While LoadIndex or Follow scans the store, writes are recorded here
	// too, to be replayed onto the indexes it is building.
	recording bool
	pending   []recordedWrite

	// loadMu orders LoadIndex and Follow; seen is the store census at
	// Follow's last look, when seenSet (under loadMu).
	loadMu  sync.Mutex
	seen    recall.Census
	seenSet bool
	// refused is a read space whose query embedder could not be made; it
	// is not tried again until the read space changes (under loadMu).
	refused string
}

// New returns an engine over st. Call LoadIndex before semantic search.
func New(st recall.Store, opt Options) *Engine {
	if opt.Fusion == "" {
		opt.Fusion = DefaultFusion
	}
	if opt.Budget <= 0 {
		opt.Budget = DefaultBudget
	}
	if opt.EmbedBudget <= 0 {
		opt.EmbedBudget = 2 * time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Engine{store: st, opt: opt, emb: opt.Embedder, wmu: make(chan struct{}, 1)}
}

// writeTurn waits for this engine's writers before it, or for ctx; the
// function it returns ends the turn.
func (e *Engine) writeTurn(ctx context.Context) (func(), error) {
	select {
	case e.wmu <- struct{}{}:
		return func() { <-e.wmu }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Store returns the underlying store.
func (e *Engine) Store() recall.Store { return e.store }

// LoadIndex builds the vector index of the read space (and, with
// Options.MemoryLexical, the in-memory full-text index) from the store;
// with Options.ScanVectors, it only looks the read space up. It
// does not block searches, which use the store's full text alone until it is
// done, nor writes: writes that commit while the store is scanned are
// recorded and replayed onto the new indexes before they go live, so they
// end up exactly in step with the store (replaying a write the scan already
// saw changes nothing: adding an indexed chunk replaces it, removing a
// missing one is a no-op).
func (e *Engine) LoadIndex(ctx context.Context) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	return e.load(ctx, nil)
}

// spaceSwitch is a load that moves searches to another read space: its
// name and query embedder.
type spaceSwitch struct {
	space string
	emb   recall.Embedder
}

// errSpaceMoved stops a switch whose space is no longer the read space.
var errSpaceMoved = errors.New("the read space changed again")

// load is LoadIndex, called with e.loadMu held. With sw it switches to
// sw.space, which must still be the read space, and its query embedder
// (the indexes in use are kept if it fails).
func (e *Engine) load(ctx context.Context, sw *spaceSwitch) error {
	spaces, err := e.store.Spaces(ctx)
	if err != nil {
		return err
	}
	var read *recall.VectorSpace
	for i := range spaces {
		if spaces[i].Read {
			read = &spaces[i]
		}
	}
	if sw != nil && (read == nil || read.Name != sw.space) {
		return errSpaceMoved
	}
	e.seen, e.seenSet = recall.Census{}, false
	var (
		space string
		vx    *unitIndex
		scan  *recall.VectorSpace
		lx    *lexindex.Index
	)
	e.mu.Lock()
	e.pending, e.recording = nil, true
	e.mu.Unlock()
	if read != nil {
		space = read.Name
	}
	// Follow's first look compares with the store as it was before these
	// scans: what another process writes during them is looked at again.
	var census recall.Census
	if e.opt.MemoryLexical {
		census, err = e.store.Census(ctx, space)
	}
	// The full text first: a chunk another process adds between the two
	// scans is then at worst in the vector index alone, which Follow's
	// next look completes; the other way round it could be missing from
	// the vector index for good (its text indexed through another chunk).
	if err == nil && e.opt.MemoryLexical {
		if lx, err = loadLexical(ctx, e.store); err != nil {
			err = fmt.Errorf("load full-text index: %w", err)
		}
	}
	switch {
	case err != nil || read == nil:
	case e.opt.EmbedderOff:
		// Semantic search is turned off (embedder none): no query is
		// embedded, and the vectors would only take memory, 600 MB at
		// a million chunks.
	case e.opt.ScanVectors:
		// Searches scan the space when it holds vectors; an empty one
		// answers as an empty index does.
		var c recall.Census
		if c, err = e.store.Census(ctx, space); err == nil && c.Vectors > 0 {
			scan = read
		}
	default:
		vx, err = loadVectors(ctx, e.store, *read)
		if err != nil {
			err = fmt.Errorf("load vector index %s: %w", space, err)
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	pending := e.pending
	e.pending, e.recording = nil, false
	if err != nil {
		return err
	}
	oldSpace, oldVx, oldLx, oldScan := e.space, e.vx, e.lx, e.scan
	e.space, e.vx, e.lx, e.scan = space, vx, lx, scan
	if err := e.replay(ctx, pending); err != nil {
		e.space, e.vx, e.lx, e.scan = oldSpace, oldVx, oldLx, oldScan
		return fmt.Errorf("load indexes: %w", err)
	}
	if lx != nil && vx != nil {
		// The vector index holds only chunks the full-text index holds
		// (Follow compares the store with the full-text index alone): a
		// chunk another process added between the two scans joins both
		// at Follow's next look.
		var extra []int64
		for _, id := range vx.chunkIDs() {
			if !lx.Has(id) {
				extra = append(extra, id)
			}
		}
		if err := vx.apply(recall.WriteResult{Removed: extra}, nil); err != nil {
			e.space, e.vx, e.lx, e.scan = oldSpace, oldVx, oldLx, oldScan
			return fmt.Errorf("load indexes: %w", err)
		}
	}
	if sw != nil {
		e.emb = sw.emb
		e.gen++ // a search that embedded its query with the old model sees it
	}
	e.loaded = true
	e.seen, e.seenSet = census, e.opt.MemoryLexical
	return nil
}

// reserveAfter is how many texts loadVectors reads before it estimates
// how many unit vectors the rest of the space holds.
const reserveAfter = 1024

// loadVectors builds the vector index of space from the store. The index's
// slabs would grow as append grows a large slice, by a quarter at a time,
// copying hundreds of megabytes again and again (a fifth of a load's CPU
// at 700,000 unit vectors): once it has read reserveAfter texts, it makes
// room for the rest at once, estimated from the store's count of texts
// and the units per text so far, and again if that falls short (texts
// written since the count).
func loadVectors(ctx context.Context, st recall.Store, space recall.VectorSpace) (*unitIndex, error) {
	vx := newUnitIndex(space.Dim, func(ctx context.Context, keys []string) (map[string][]float32, error) {
		return st.VectorsByKey(ctx, space.Name, keys)
	})
	census, err := st.Census(ctx, space.Name)
	if err != nil {
		return nil, err
	}
	texts, units := 0, 0
	add := func(c recall.IndexedChunk, vec []float32) error {
		if vx.has(c.VectorKey) {
			return vx.add(c, nil)
		}
		n := len(vec) / space.Dim
		if texts >= reserveAfter && n > vx.room() {
			// At least a quarter more, as append would: texts written
			// since the census would otherwise each copy the slabs.
			left := max(0, census.Vectors-texts)
			vx.reserve(max(n+int(float64(left)*float64(units)/float64(texts)*1.02), units/4))
		}
		texts, units = texts+1, units+n
		return vx.add(c, vec)
	}

	// The scan (SQLite reading the rows) and the encoding of their vectors
	// into the index each take about half of a load: they run on two
	// goroutines, the rows passed along in order in batches.
	type row struct {
		c   recall.IndexedChunk
		vec []float32
	}
	const batch = 128
	rows := make(chan []row, 8)
	var addErr error
	var failed atomic.Bool // addErr is set: the scan stops
	added := make(chan struct{})
	go func() {
		defer close(added)
		defer func() {
			// Not to end the process from a goroutine no caller can
			// recover: the load fails with it instead.
			if p := recover(); p != nil {
				addErr = fmt.Errorf("vector index load: panic: %v", p)
				failed.Store(true)
				for range rows { // let the scan finish its sends
				}
			}
		}()
		for b := range rows {
			for _, r := range b {
				if addErr == nil {
					if addErr = add(r.c, r.vec); addErr != nil {
						failed.Store(true)
					}
				}
			}
		}
	}()
	errStop := errors.New("stop")
	err = func() error {
		defer close(rows) // however the scan ends, a panic included
		var buf []row
		err := st.ScanVectors(ctx, space.Name, func(c recall.IndexedChunk, vec []float32) error {
			if failed.Load() {
				return errStop
			}
			buf = append(buf, row{c, vec})
			if len(buf) == batch {
				rows <- buf
				buf = make([]row, 0, batch)
			}
			return nil
		})
		if err == nil && len(buf) > 0 {
			rows <- buf
		}
		return err
	}()
	<-added
	if addErr != nil {
		return vx, addErr
	}
	return vx, err
}

// replay applies writes recorded while the store was scanned. Replaying a
// write the scan already saw changes nothing: adding an indexed chunk
// replaces it, removing a missing one is a no-op. Called with e.mu held.
func (e *Engine) replay(ctx context.Context, pending []recordedWrite) error {
	for _, w := range pending {
		var err error
		switch {
		case w.put && e.vx != nil:
			live := slices.DeleteFunc(slices.Clone(w.indexed), func(c recall.IndexedChunk) bool { return e.lx != nil && !e.lx.Has(c.ID) })
			err = e.indexChunks(live, e.spaceVectors(w.vecs))
		case !w.put:
			err = e.apply(ctx, w.res, w.vecs, nil)
		}
		if err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	return nil
}

// loadLexical builds the in-memory full-text index from every chunk in the
// store, turning texts into terms on every core.
func loadLexical(ctx context.Context, st recall.Store) (*lexindex.Index, error) {
	lx := lexindex.New()
	const batch = 512
	var chunks []recall.StoredChunk
	titles := map[recall.SourceMeta][]string{}
	flush := func() {
		body := make([][]string, len(chunks))
		par.For(runtime.GOMAXPROCS(0), len(chunks), func(_, i int) { body[i] = textindex.Terms(chunks[i].Text) })
		for i, c := range chunks {
			title, ok := titles[c.Source]
			if !ok {
				title = titleTerms(c.Source)
				titles[c.Source] = title
			}
			lx.Add(c.ID, c.Source, c.Hash, title, body[i])
		}
		chunks = chunks[:0]
		if len(titles) > 4*batch {
			clear(titles)
		}
	}
	err := st.ScanChunks(ctx, func(c recall.StoredChunk) error {
		chunks = append(chunks, c)
		if len(chunks) == batch {
			flush()
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	flush()
	return lx, nil
}

// titleTerms are the terms of a source's title column, as the store's
// full-text index holds them.
func titleTerms(m recall.SourceMeta) []string {
	return textindex.Terms(textindex.TitleText(m.Title, m.Date))
}

// recordedWrite is a write that committed while LoadIndex or Follow was
// reading the store.
type recordedWrite struct {
	res  recall.WriteResult
	vecs []recall.Vector
	// put marks a PutVectors call; indexed are the chunks holding its
	// texts then, of every space (a chunk written later with one of them
	// has no vector unless its own write brought one).
	put     bool
	indexed []recall.IndexedChunk
}

// QueryEmbedder returns the space searches read from, its dimension and
// the embedder its queries are embedded with (nil: lexical only). After
// Follow switched the read space, a server makes its writes go there too.
func (e *Engine) QueryEmbedder() (emb recall.Embedder, space string, dim int) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.vx != nil {
		dim = e.vx.dim
	}
	return e.emb, e.space, dim
}

// ReadSpace returns the name of the space searches read from and how many
// chunks its index holds.
func (e *Engine) ReadSpace() (string, int) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.vx == nil {
		return e.space, 0
	}
	return e.space, e.vx.len()
}

// Write stores documents and vectors, and removes the sources named in
// remove (recall.Store.Write), and brings the vector index up to date
// in the same critical section, so a search never sees a vector whose chunk
// is gone. The critical section starts right before the store commits
// (lockAtCommit): searches go on while the transaction does its work.
func (e *Engine) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error) {
	terms := e.termsOf(docs)
	done, err := e.writeTurn(ctx)
	if err != nil {
		return recall.WriteResult{}, err
	}
	defer done()
	wctx, hold := e.lockAtCommit(ctx)
	res, err := e.store.Write(wctx, docs, vecs, remove...)
	hold()
	defer e.mu.Unlock()
	if err != nil {
		return res, err
	}
	e.record(recordedWrite{res: res, vecs: vecs})
	e.embedderAnswered(vecs)
	return res, e.apply(ctx, res, vecs, terms)
}

// embedderAnswered closes the query embedder's breaker when vecs hold
// vectors of the read space: this process just made them (a save, a
// sweep, a repair) with that space's embedder, so it answers again, and a
// search need not wait out the breaker to find so. Called with e.mu held.
func (e *Engine) embedderAnswered(vecs []recall.Vector) {
	for _, v := range vecs {
		if v.Space == e.space && e.space != "" {
			e.brk.answered(e.emb)
			return
		}
	}
}

// lockAtCommit returns a context that makes a store write take the
// engine's write lock right before it commits (recall.WithCommitHook), and
// a function that returns with the lock held, taking it if the write
// failed before its commit.
func (e *Engine) lockAtCommit(ctx context.Context) (context.Context, func()) {
	var locked atomic.Bool
	hold := func() {
		if !locked.Swap(true) {
			e.mu.Lock()
		}
	}
	return recall.WithCommitHook(ctx, hold), hold
}

// termsOf returns the full-text terms of the documents' chunk texts by
// text hash, for the in-memory full-text index (nil without one), made
// before the write lock is taken.
func (e *Engine) termsOf(docs []recall.Document) map[string][]string {
	if !e.opt.MemoryLexical {
		return nil
	}
	var chunks []*recall.Chunk
	for i := range docs {
		for j := range docs[i].Chunks {
			chunks = append(chunks, &docs[i].Chunks[j])
		}
	}
	terms := make([][]string, len(chunks))
	par.For(runtime.GOMAXPROCS(0), len(chunks), func(_, i int) { terms[i] = textindex.Terms(chunks[i].Text) })
	out := make(map[string][]string, len(chunks))
	for i, c := range chunks {
		out[c.Hash] = terms[i]
	}
	return out
}

// record counts a committed write and keeps it for LoadIndex to replay.
// Called with e.mu held.
func (e *Engine) record(w recordedWrite) {
	e.gen++
	if e.recording {
		e.pending = append(e.pending, w)
	}
}

// Update is Store.Update with the index kept in step.
func (e *Engine) Update(ctx context.Context, id string, fn func(cur *recall.Document) (*recall.Document, error)) (recall.WriteResult, error) {
	var terms map[string][]string
	done, err := e.writeTurn(ctx)
	if err != nil {
		return recall.WriteResult{}, err
	}
	defer done()
	wctx, hold := e.lockAtCommit(ctx)
	res, err := e.store.Update(wctx, id, func(cur *recall.Document) (*recall.Document, error) {
		next, err := fn(cur)
		terms = nil
		if next != nil {
			terms = e.termsOf([]recall.Document{*next})
		}
		return next, err
	})
	hold()
	defer e.mu.Unlock()
	if err != nil {
		return res, err
	}
	e.record(recordedWrite{res: res})
	return res, e.apply(ctx, res, nil, terms)
}

// Delete removes sources from the store and the index.
func (e *Engine) Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error) {
	done, err := e.writeTurn(ctx)
	if err != nil {
		return 0, recall.WriteResult{}, err
	}
	defer done()
	wctx, hold := e.lockAtCommit(ctx)
	n, res, err := e.store.Delete(wctx, ids...)
	hold()
	defer e.mu.Unlock()
	if err != nil {
		return n, res, err
	}
	e.record(recordedWrite{res: res})
	return n, res, e.apply(ctx, res, nil, nil)
}

// PutVectors stores vectors and indexes every chunk that holds their keys.
func (e *Engine) PutVectors(ctx context.Context, vecs []recall.Vector) error {
	done, err := e.writeTurn(ctx)
	if err != nil {
		return err
	}
	defer done()
	wctx, hold := e.lockAtCommit(ctx)
	err = e.store.PutVectors(wctx, vecs)
	hold()
	defer e.mu.Unlock()
	if err != nil {
		return err
	}
	e.embedderAnswered(vecs)
	ctx = context.WithoutCancel(ctx)
	err = e.indexVectors(ctx, vecs)
	w := recordedWrite{vecs: vecs, put: true}
	if e.recording && err == nil {
		// The indexes being built may be of another space than the one
		// in use, or there may be none in use yet (the first load): the
		// replay indexes the chunks holding these keys now, of every
		// space's vectors, not only those indexed here.
		keys := make([]string, len(vecs))
		for i, v := range vecs {
			keys[i] = v.Key
		}
		slices.Sort(keys)
		w.indexed, err = e.store.ChunksByVectorKey(ctx, slices.Compact(keys))
	}
	e.record(w)
	return err
}

// indexVectors adds the chunks holding the keys of vecs (of the read
// space) to the index. With the in-memory full-text index, only chunks it
// holds: one another process wrote joins both indexes when Follow finds
// it. Called with e.mu held.
func (e *Engine) indexVectors(ctx context.Context, vecs []recall.Vector) error {
	if e.vx == nil {
		return nil
	}
	byKey := e.spaceVectors(vecs)
	if len(byKey) == 0 {
		return nil
	}
	chunks, err := e.store.ChunksByVectorKey(ctx, slices.Collect(maps.Keys(byKey)))
	if err != nil {
		return err
	}
	chunks = slices.DeleteFunc(chunks, func(c recall.IndexedChunk) bool { return e.lx != nil && !e.lx.Has(c.ID) })
	return e.indexChunks(chunks, byKey)
}

// spaceVectors returns the vectors of the read space in vecs by key.
func (e *Engine) spaceVectors(vecs []recall.Vector) map[string][]float32 {
	byKey := make(map[string][]float32)
	for _, v := range vecs {
		if v.Space == e.space {
			byKey[v.Key] = v.Vec
		}
	}
	return byKey
}

// indexChunks adds chunks to the vector index with their vectors from
// byKey, or the ones it holds. Called with e.mu held.
func (e *Engine) indexChunks(chunks []recall.IndexedChunk, byKey map[string][]float32) error {
	for _, c := range chunks {
		vec := byKey[c.VectorKey]
		if e.vx.has(c.VectorKey) {
			vec = nil
		} else if vec == nil {
			continue
		}
		if err := e.vx.add(c, vec); err != nil {
			return err
		}
	}
	return nil
}

// apply brings the indexes in line with a committed write. Called with e.mu
// held. Vectors come from the write itself, the index (a key it already
// holds), or the store; a chunk whose key has none yet is left for repair.
// terms are the full-text terms of the written texts by hash, when the
// caller has them (termsOf); other added chunks are read back from the
// store.
func (e *Engine) apply(ctx context.Context, res recall.WriteResult, vecs []recall.Vector, terms map[string][]string) error {
	if len(res.Added) == 0 && len(res.Removed) == 0 {
		return nil
	}
	// The write has committed: the indexes must follow it even if the
	// caller has gone meanwhile.
	ctx = context.WithoutCancel(ctx)
	if err := e.applyLexical(ctx, res, terms); err != nil {
		return err
	}
	if e.vx == nil {
		return nil
	}
	batch := e.spaceVectors(vecs)
	var need []string
	for _, c := range res.Added {
		if _, ok := batch[c.VectorKey]; !ok && !e.vx.has(c.VectorKey) {
			need = append(need, c.VectorKey)
		}
	}
	var err error
	if len(need) > 0 {
		var stored map[string][]float32
		// On failure the chunks without a vector wait for repair, but
		// the removals still apply.
		if stored, err = e.store.VectorsByKey(ctx, e.space, need); err == nil {
			for k, v := range stored {
				batch[k] = v
			}
		}
	}
	// Keys the index gains with this write (their vectors came with it
	// or from the store): chunks written earlier with them, without a
	// vector then, join it as well, as a load would index them.
	var gained []string
	for k := range batch {
		if !e.vx.has(k) {
			gained = append(gained, k)
		}
	}
	if aerr := e.vx.apply(res, batch); aerr != nil {
		return errors.Join(err, aerr)
	}
	if err == nil {
		err = e.joinHolders(ctx, gained)
	}
	return err
}

// joinHolders adds to the vector index the chunks holding keys it has
// just gained that it does not index yet: chunks written without a vector
// before their key got one. Called with e.mu held, after the keys'
// vectors are in the index.
func (e *Engine) joinHolders(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	holders, err := e.store.ChunksByVectorKey(ctx, keys)
	if err != nil {
		return err
	}
	holders = slices.DeleteFunc(holders, func(c recall.IndexedChunk) bool {
		return e.vx.hasChunk(c.ID) || e.lx != nil && !e.lx.Has(c.ID)
	})
	return e.indexChunks(holders, nil)
}

// applyLexical brings the in-memory full-text index in line with a
// committed write: the added chunks' terms come from terms by text hash,
// or their texts are read back from the store. Called with e.mu held.
func (e *Engine) applyLexical(ctx context.Context, res recall.WriteResult, terms map[string][]string) error {
	if e.lx == nil {
		return nil
	}
	e.lx.Remove(res.Removed...)
	var missing []int64
	for _, c := range res.Added {
		if t, ok := terms[c.Hash]; ok {
			e.lx.Add(c.ID, c.Source, c.Hash, titleTerms(c.Source), t)
		} else {
			missing = append(missing, c.ID)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	chunks, err := e.store.ChunksByID(ctx, missing)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		e.lx.Add(c.ID, c.Source, c.Hash, titleTerms(c.Source), textindex.Terms(c.Text))
	}
	return nil
}
