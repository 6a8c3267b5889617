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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/lexindex"
	"github.com/recall-mcp/recall/internal/par"
	"github.com/recall-mcp/recall/internal/textindex"
)

// Fusion methods for hybrid search.
const (
	FusionRRF      = "rrf"      // reciprocal rank fusion (Cormack et al. 2009)
	FusionWeighted = "weighted" // semantic score + bonuses, as the replaced personal-memory system ranked
	FusionConvex   = "convex"   // equal mix of the two scores, each scaled to [0, 1] over the candidates
)

// DefaultFusion is the fusion method measured best on the development set
// (BENCHMARKS.md).
const DefaultFusion = FusionConvex

// Fusions lists the fusion methods.
var Fusions = []string{FusionRRF, FusionWeighted, FusionConvex}

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
	vx := newUnitIndex(space.Dim, func(ctx context.Context, hashes []string) (map[string][]float32, error) {
		return st.VectorsByHash(ctx, space.Name, hashes)
	})
	census, err := st.Census(ctx, space.Name)
	if err != nil {
		return nil, err
	}
	texts, units := 0, 0
	add := func(c recall.IndexedChunk, vec []float32) error {
		if vx.has(c.Hash) {
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

// Write stores documents and vectors and brings the vector index up to date
// in the same critical section, so a search never sees a vector whose chunk
// is gone. The critical section starts right before the store commits
// (lockAtCommit): searches go on while the transaction does its work.
func (e *Engine) Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector) (recall.WriteResult, error) {
	terms := e.termsOf(docs)
	done, err := e.writeTurn(ctx)
	if err != nil {
		return recall.WriteResult{}, err
	}
	defer done()
	wctx, hold := e.lockAtCommit(ctx)
	res, err := e.store.Write(wctx, docs, vecs)
	hold()
	defer e.mu.Unlock()
	if err != nil {
		return res, err
	}
	e.record(recordedWrite{res: res, vecs: vecs})
	return res, e.apply(ctx, res, vecs, terms)
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

// PutVectors stores vectors and indexes every chunk that holds their texts.
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
	ctx = context.WithoutCancel(ctx)
	err = e.indexVectors(ctx, vecs)
	w := recordedWrite{vecs: vecs, put: true}
	if e.recording && err == nil {
		// The indexes being built may be of another space than the one
		// in use, or there may be none in use yet (the first load): the
		// replay indexes the chunks holding these texts now, of every
		// space's vectors, not only those indexed here.
		hashes := make([]string, len(vecs))
		for i, v := range vecs {
			hashes[i] = v.Hash
		}
		slices.Sort(hashes)
		w.indexed, err = e.store.ChunksByHash(ctx, slices.Compact(hashes))
	}
	e.record(w)
	return err
}

// indexVectors adds the chunks holding the texts of vecs (of the read
// space) to the index. With the in-memory full-text index, only chunks it
// holds: one another process wrote joins both indexes when Follow finds
// it. Called with e.mu held.
func (e *Engine) indexVectors(ctx context.Context, vecs []recall.Vector) error {
	if e.vx == nil {
		return nil
	}
	byHash := e.spaceVectors(vecs)
	if len(byHash) == 0 {
		return nil
	}
	chunks, err := e.store.ChunksByHash(ctx, slices.Collect(maps.Keys(byHash)))
	if err != nil {
		return err
	}
	chunks = slices.DeleteFunc(chunks, func(c recall.IndexedChunk) bool { return e.lx != nil && !e.lx.Has(c.ID) })
	return e.indexChunks(chunks, byHash)
}

// spaceVectors returns the vectors of the read space in vecs by hash.
func (e *Engine) spaceVectors(vecs []recall.Vector) map[string][]float32 {
	byHash := make(map[string][]float32)
	for _, v := range vecs {
		if v.Space == e.space {
			byHash[v.Hash] = v.Vec
		}
	}
	return byHash
}

// indexChunks adds chunks to the vector index with their texts' vectors
// from byHash, or the ones it holds. Called with e.mu held.
func (e *Engine) indexChunks(chunks []recall.IndexedChunk, byHash map[string][]float32) error {
	for _, c := range chunks {
		vec := byHash[c.Hash]
		if e.vx.has(c.Hash) {
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
// held. Vectors come from the write itself, the index (a text it already
// holds), or the store; a chunk whose text has none yet is left for repair.
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
	batch := make(map[string][]float32)
	for _, v := range vecs {
		if v.Space == e.space {
			batch[v.Hash] = v.Vec
		}
	}
	var need []string
	for _, c := range res.Added {
		if _, ok := batch[c.Hash]; !ok && !e.vx.has(c.Hash) {
			need = append(need, c.Hash)
		}
	}
	var err error
	if len(need) > 0 {
		var stored map[string][]float32
		// On failure the chunks without a vector wait for repair, but
		// the removals still apply.
		if stored, err = e.store.VectorsByHash(ctx, e.space, need); err == nil {
			for h, v := range stored {
				batch[h] = v
			}
		}
	}
	// Texts the index gains with this write (their vectors came with it
	// or from the store): chunks written earlier with them, without a
	// vector then, join it as well, as a load would index them.
	var gained []string
	for h := range batch {
		if !e.vx.has(h) {
			gained = append(gained, h)
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

// joinHolders adds to the vector index the chunks holding texts it has
// just gained that it does not index yet: chunks written without a vector
// before their text got one. Called with e.mu held, after the texts'
// vectors are in the index.
func (e *Engine) joinHolders(ctx context.Context, hashes []string) error {
	if len(hashes) == 0 {
		return nil
	}
	holders, err := e.store.ChunksByHash(ctx, hashes)
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

// Validate checks a request and fills in defaults.
func Validate(req *recall.SearchRequest) error {
	req.Query = strings.TrimSpace(req.Query)
	if req.Query == "" {
		return recall.Errorf(recall.EINVALID, "query is empty")
	}
	if !utf8.ValidString(req.Query) {
		return recall.Errorf(recall.EINVALID, "query is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(req.Query); n > recall.MaxQueryLen {
		return recall.Errorf(recall.EINVALID, "query is %d characters; the limit is %d", n, recall.MaxQueryLen)
	}
	switch {
	case req.Limit == 0:
		req.Limit = recall.DefaultLimit
	case req.Limit < 0 || req.Limit > recall.MaxLimit:
		return recall.Errorf(recall.EINVALID, "limit must be between 1 and %d", recall.MaxLimit)
	}
	switch {
	case req.PerSource == 0:
		req.PerSource = recall.DefaultPerSource
	case req.PerSource < 0 || req.PerSource > recall.MaxLimit:
		return recall.Errorf(recall.EINVALID, "per-source cap must be between 1 and %d", recall.MaxLimit)
	}
	switch req.Mode {
	case "", recall.ModeHybrid, recall.ModeLexical, recall.ModeSemantic:
	default:
		return recall.Errorf(recall.EINVALID, "unknown mode %q: use hybrid, lexical or semantic", req.Mode)
	}
	return req.Filter.Validate()
}

// candidate is one chunk proposed by a retriever, with its ranks.
type candidate struct {
	id       int64
	lexRank  int // 1-based; 0 when lexical did not propose it
	vecRank  int
	lexScore float64
	vecScore float64
	score    float64
}

// maxDepth bounds how deep Search reads each retriever's candidates to
// fill a page that the per-source cap left short.
const maxDepth = 2560

// Search runs one query.
func (e *Engine) Search(ctx context.Context, req recall.SearchRequest) (recall.SearchResponse, error) {
	if err := Validate(&req); err != nil {
		return recall.SearchResponse{}, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, e.opt.Budget, errSearchBudget)
	defer cancel()
	// A single retriever ranks by its own scores: it over-fetches so that
	// collapsing duplicates and capping per source still fill the page.
	// Hybrid scales each cosine against the weakest vector candidate's, so
	// the depth of its candidate lists decides ranks: it is the same for
	// every page up to 10 results of 2 per source, so the top of a page does
	// not depend on how long a page was asked for. (Each candidate costs a
	// read of its text; 40 of each kind fill such a page.)
	want := max(30, req.Limit*req.PerSource*4)
	depth := max(40, req.Limit*req.PerSource*2)
	q := &queryVec{}
	pass := func(want, depth int) (recall.SearchResponse, bool, error) {
		resp, more, err := e.search(ctx, req, want, depth, q)
		for errors.Is(err, errSwitched) {
			// The read space switched while the query was embedded: once
			// more, with the new space's model (at most maxSwitchRetries
			// times; then search answers without the vector).
			resp, more, err = e.search(ctx, req, want, depth, q)
		}
		return resp, more, err
	}
	resp, more, err := pass(want, depth)
	// When one long conversation holds every candidate, the per-source cap
	// leaves the page short although other sources match further down:
	// read deeper and fill the page with what ranks next, below the
	// results already placed (their order stays as the first pass ranked
	// it; deeper lists would rescale hybrid scores).
	for f := 4; err == nil && more && len(resp.Results) < req.Limit && depth*f <= maxDepth; f *= 4 {
		var deeper recall.SearchResponse
		deeper, more, err = pass(want*f, depth*f)
		if err == nil {
			resp.Results = backfill(resp.Results, deeper.Results, req)
		}
	}
	return resp, err
}

// backfill appends to hits the results of a deeper pass that are not on the
// page yet, within the per-source cap and the limit, scored no higher than
// the last hit so that the page stays in order.
func backfill(hits, deeper []recall.Hit, req recall.SearchRequest) []recall.Hit {
	type key struct {
		source string
		index  int
	}
	placed := map[key]bool{}
	texts := map[string]bool{}
	perSource := map[string]int{}
	for _, h := range hits {
		id := hitID(h)
		placed[key{id, h.ChunkIndex}] = true
		texts[h.Text] = true
		perSource[id]++
	}
	for _, h := range deeper {
		if len(hits) == req.Limit {
			break
		}
		id := hitID(h)
		if placed[key{id, h.ChunkIndex}] || texts[h.Text] || perSource[id] >= req.PerSource {
			continue
		}
		if n := len(hits); n > 0 {
			h.Score = min(h.Score, hits[n-1].Score)
		}
		texts[h.Text] = true
		perSource[id]++
		hits = append(hits, h)
	}
	return hits
}

// hitID is the internal id of a hit's source. The name a hit shows is not
// enough: an archive file, and memories of several owners, may share one.
func hitID(h recall.Hit) string {
	switch h.Kind {
	case recall.KindMemory:
		return recall.MemoryID(h.Owner, h.Source)
	case recall.KindDiary:
		return recall.DiaryID(h.Owner, strings.TrimPrefix(h.Source, "diary/"))
	}
	return h.Source
}

// queryVec is a search's query vector, embedded once for all its passes.
type queryVec struct {
	done    bool
	emb     recall.Embedder // the embedder vec is of
	vec     []float32
	err     error
	skipped string // why the embedder was not called (the breaker is open), for the client
	retries int    // passes run again after a switch of the read space
}

// The causes that end a search's context, and its embedding's, when their
// budgets run out: anything else ending them is the caller leaving.
var (
	errSearchBudget = errors.New("the search's budget ran out")
	errEmbedBudget  = errors.New("the embedding's budget ran out")
)

// maxSwitchRetries bounds how many times one search runs a pass again
// because the read space switched while its query was embedded: switches
// come one at a time, seconds apart, but two can land in one search when
// they follow each other closely (a switch and its undo).
const maxSwitchRetries = 3

// errSwitched makes Search run a pass again: the read space switched
// while its query was embedded.
var errSwitched = errors.New("the read space switched during the search")

// embedOut is how embedding a search's query ended.
type embedOut struct {
	vec  []float32
	err  error
	gone bool // the caller left before the embedder answered
}

// embedQuery embeds a search's query with emb, within the embed budget.
func (e *Engine) embedQuery(ctx context.Context, emb recall.Embedder, query string) embedOut {
	ectx, cancel := context.WithTimeoutCause(ctx, e.opt.EmbedBudget, errEmbedBudget)
	defer cancel()
	vecs, err := emb.Embed(ectx, recall.InputQuery, []string{query})
	if err != nil && ectx.Err() != nil {
		// Say whose wait ended rather than "context deadline exceeded".
		switch context.Cause(ectx) {
		case errEmbedBudget:
			err = recall.Errorf(recall.EUNAVAILABLE, "the embedder did not answer within %s", e.opt.EmbedBudget)
		case errSearchBudget:
			err = recall.Errorf(recall.EUNAVAILABLE, "the embedder did not answer within the search's time (%s)", e.opt.Budget)
		default:
			return embedOut{err: err, gone: true}
		}
	}
	if err == nil {
		// A vector no search can use (NaN, all zeros) is an embedding
		// that failed: hybrid goes on with full text.
		err = embed.Validate(vecs, 1, 0)
	}
	if err != nil {
		return embedOut{err: err}
	}
	return embedOut{vec: vecs[0]}
}

// search is one pass of Search over the first want (single retriever) or
// depth (hybrid) candidates of each retriever. more reports whether a
// retriever had candidates beyond those.
func (e *Engine) search(ctx context.Context, req recall.SearchRequest, want, depth int, q *queryVec) (resp recall.SearchResponse, more bool, err error) {
	// Full text needs no query vector: it runs, and its candidates are
	// read from the store, while the query is embedded and the vectors are
	// searched. The query is embedded before the engine's lock is taken: a
	// slow embedder must not hold up writers.
	var embedDone chan embedOut
	var probe bool // the embedder is called to learn whether it is back
	e.mu.RLock()
	emb := e.emb
	e.mu.RUnlock()
	if q.done && q.emb != emb {
		*q = queryVec{retries: q.retries} // the read space switched since the query was embedded
	}
	if req.Mode != recall.ModeLexical && emb != nil && !q.done {
		q.emb = emb
		var why string
		var cause error
		probe, why, cause = e.brk.admit(emb, e.opt.Now())
		if why == "" {
			embedDone = make(chan embedOut, 1)
			go func() { embedDone <- e.embedQuery(ctx, emb, req.Query) }()
		} else if vec, ok := embed.Cached(emb, req.Query); ok && embed.Validate([][]float32{vec}, 1, 0) == nil {
			// The embedder is left alone, but it embedded this query
			// before.
			q.vec, q.done = vec, true
		} else {
			q.err, q.skipped, q.done = cause, why, true
		}
	}
	type lexOut struct {
		cands   []recall.Candidate
		chunks  []recall.StoredChunk
		holders map[string]bool // quotedSemantic: the sources holding the quoted words
		err     error
	}
	var lexDone chan lexOut
	var gen uint64 // e.gen when full text ran
	// A semantic search with quoted words ranks, by vector, the sources
	// that hold them, which full text (it requires quoted words) finds:
	// the passages holding them may be far down the vector ranking. Every
	// source holding them is asked for, up to maxPhraseHolders texts: the
	// best by vector may rank anywhere by full text.
	quotedSemantic := req.Mode == recall.ModeSemantic && len(textindex.QuotedPhrases(req.Query)) > 0
	if req.Mode != recall.ModeSemantic || quotedSemantic {
		// The index is picked here, not on the goroutine: taking the read
		// lock there while this one holds it could wait behind a writer
		// that waits for this one.
		e.mu.RLock()
		lx := e.lx
		gen = e.gen
		// Hybrid fuses the first depth candidates; the rest are there in
		// case it falls back to full text alone, and are read only then.
		lexWant, read := max(want, depth), want
		switch {
		case quotedSemantic:
			lexWant, read = maxPhraseHolders, maxPhraseHolders // for their sources
		case req.Mode != recall.ModeLexical && e.vecReady():
			read = depth
		}
		e.mu.RUnlock()
		lexDone = make(chan lexOut, 1)
		go func() {
			var out lexOut
			out.cands, out.err = e.lexical(ctx, lx, req, lexWant)
			if out.err == nil && len(out.cands) > 0 {
				ids := make([]int64, min(read, len(out.cands)))
				for i := range ids {
					ids[i] = out.cands[i].ChunkID
				}
				out.chunks, out.err = e.store.ChunksByID(ctx, ids)
			}
			if quotedSemantic {
				out.holders = phraseHolders(req.Query, out.chunks)
			}
			lexDone <- out
		}()
	}
	var gone bool
	if embedDone != nil {
		out := <-embedDone
		q.vec, q.err, gone = out.vec, out.err, out.gone
	}
	q.done = true
	qvec, embedErr := q.vec, q.err

	e.mu.RLock()
	defer e.mu.RUnlock()
	// A write that committed since full text ran may have replaced chunks
	// it read: read them again, under the lock, with the vector results.
	stale := lexDone != nil && e.gen != gen

	resp = recall.SearchResponse{Query: req.Query, Mode: req.Mode}
	vecReady := e.vecReady()
	switched := qvec != nil && e.emb != emb
	if !switched && qvec != nil && vecReady && len(qvec) != e.vecDim() {
		qvec, embedErr = nil, recall.Errorf(recall.ECONFLICT, "the embedder returned a %d-dimensional query vector for a %d-dimensional space", len(qvec), e.vecDim())
	}
	if embedDone != nil {
		// What came of asking the embedder opens or closes the breaker;
		// a vector of the wrong size fails, as it would for every query.
		e.brk.report(emb, probe, gone, embedErr, e.opt.Now())
	}
	if switched {
		// The read space switched while the query was embedded: its vector
		// is of the other model. Search runs the pass again, up to
		// maxSwitchRetries times.
		if q.retries < maxSwitchRetries {
			*q = queryVec{retries: q.retries + 1}
			return resp, false, errSwitched
		}
		qvec, embedErr = nil, recall.Errorf(recall.EUNAVAILABLE, "the read space switched during the search")
		*q = queryVec{retries: q.retries}
	}
	switch {
	case resp.Mode == "" || resp.Mode == recall.ModeHybrid:
		resp.Mode = recall.ModeHybrid
		if !vecReady {
			resp.Mode = recall.ModeLexical
			resp.Note = e.noVectorsReason(ctx) + "; searched full text only"
		} else if switched {
			resp.Mode = recall.ModeLexical
			resp.Note = "the read space switched during the search; searched full text only"
		} else if qvec == nil {
			resp.Mode = recall.ModeLexical
			resp.Note = "the query could not be embedded; searched full text only"
			if q.skipped != "" {
				resp.Note = q.skipped + "; searched full text only"
			}
			resp.EmbedError = embedErr
		}
	case resp.Mode == recall.ModeSemantic && !vecReady:
		msg := e.noVectorsReason(ctx)
		if msg != embedderOff {
			msg = "semantic search is unavailable: " + msg
		}
		return resp, false, recall.Errorf(recall.EUNAVAILABLE, "%s", msg)
	case resp.Mode == recall.ModeSemantic && qvec == nil && q.skipped != "":
		// Failing at once, saying when the embedder is tried again,
		// serves better than waiting out a budget to fail as likely.
		return resp, false, recall.WrapError(recall.EUNAVAILABLE, embedErr, "%s", q.skipped)
	case resp.Mode == recall.ModeSemantic && qvec == nil:
		return resp, false, recall.WrapError(recall.EUNAVAILABLE, embedErr, "the query could not be embedded")
	}

	cands := make(map[int64]*candidate)
	var order []*candidate
	get := func(id int64) *candidate {
		c, ok := cands[id]
		if !ok {
			c = &candidate{id: id}
			cands[id] = c
			order = append(order, c)
		}
		return c
	}
	have := map[int64]*recall.StoredChunk{}
	var holders map[string]bool // quotedSemantic: the sources holding the quoted words
	if quotedSemantic {
		out := <-lexDone
		lexDone = nil
		if out.err != nil {
			return resp, false, out.err
		}
		holders = out.holders
	}
	var vecRes []unitHit
	if resp.Mode != recall.ModeLexical {
		vecWant := depth
		if resp.Mode == recall.ModeSemantic {
			vecWant = want
		}
		var err error
		// Semantic results are ranked by their cosines alone: rescored
		// with the float vectors. Hybrid blends them with full-text scores
		// after scaling, where the codes' error (about 0.001) decides
		// nothing, and saves the reads.
		// (Without an index, the scan's scores are exact in every mode.)
		exact := resp.Mode == recall.ModeSemantic
		if e.vx != nil {
			vecRes, err = e.vx.search(ctx, qvec, vecWant, req.Filter, holders, exact)
		} else {
			vecRes, err = e.streamSearch(ctx, qvec, vecWant, req.Filter, holders)
		}
		if err != nil {
			return resp, false, err
		}
		more = len(vecRes) >= vecWant
	}
	if lexDone != nil {
		out := <-lexDone
		if out.err != nil {
			return resp, false, out.err
		}
		cands := out.cands
		more = more || len(cands) >= max(want, depth)
		if resp.Mode == recall.ModeHybrid {
			cands = cands[:min(depth, len(cands))]
		}
		for i, c := range cands {
			cc := get(c.ChunkID)
			cc.lexRank, cc.lexScore = i+1, c.Score
		}
		for i := range out.chunks {
			if !stale {
				have[out.chunks[i].ID] = &out.chunks[i]
			}
		}
	}
	for i, r := range vecRes {
		for _, id := range r.ChunkIDs {
			cc := get(id)
			cc.vecRank, cc.vecScore = i+1, float64(r.Score)
		}
	}
	if len(order) == 0 {
		resp.Results = []recall.Hit{}
		return resp, false, nil
	}
	resp, err = e.shape(ctx, req, resp, order, have)
	return resp, more, err
}

// maxPhraseHolders bounds how many texts holding a quoted phrase a
// semantic search ranks by vector (the store's full text returns no more).
const maxPhraseHolders = 1000

// phraseHolders returns the sources of the chunks that hold the quoted
// phrases of query word for word (nil when none does: the vectors then
// rank every passage, and say so). Full text matches phrases by stems.
func phraseHolders(query string, chunks []recall.StoredChunk) map[string]bool {
	_, all := exactPhrases(query)
	phrases := textindex.NewPhrases(all)
	var holders map[string]bool
	for _, c := range chunks {
		if phrases.InAll(c.Text) {
			if holders == nil {
				holders = map[string]bool{}
			}
			holders[c.Source.ID] = true
		}
	}
	return holders
}

// vecReady reports whether vector search can run (under e.mu).
func (e *Engine) vecReady() bool {
	return e.emb != nil && (e.vx != nil && e.vx.len() > 0 || e.scan != nil)
}

// vecDim is the dimension of the read space's vectors, when vecReady.
func (e *Engine) vecDim() int {
	if e.vx != nil {
		return e.vx.dim
	}
	return e.scan.Dim
}

// StoreFullText reports whether a search for query reads its full-text
// candidates from the store's index (quoted phrases, words of scripts
// written without spaces, or any before the in-memory index is loaded), which holds one of the store's
// read connections for as long as the query runs: up to the search's budget
// for a long phrase of common words. Servers bound how many such searches
// one client runs at once.
func (e *Engine) StoreFullText(query string) bool {
	e.mu.RLock()
	lx := e.lx
	e.mu.RUnlock()
	_, ok := memoryTerms(lx, query)
	return !ok
}

// memoryTerms returns the query's terms when the in-memory index lx can
// rank it: lx is loaded and the query is plain words.
func memoryTerms(lx *lexindex.Index, query string) ([]string, bool) {
	if lx == nil {
		return nil, false
	}
	return lexindex.QueryTerms(textindex.ParseQuery(query))
}

// lexical returns the full-text candidates of a search: from the in-memory
// index lx when it is loaded and the query is plain words, else from the
// store. It takes no engine lock (lexindex has its own).
func (e *Engine) lexical(ctx context.Context, lx *lexindex.Index, req recall.SearchRequest, want int) ([]recall.Candidate, error) {
	if terms, ok := memoryTerms(lx, req.Query); ok {
		return lx.Search(terms, want, req.Filter.Matcher()), nil
	}
	return e.store.Lexical(ctx, recall.LexicalQuery{Text: req.Query, Filter: req.Filter, Limit: want})
}

const embedderOff = "semantic search is turned off: the embedder is set to none"

// noVectorsReason says why a search cannot use vectors (under e.mu).
// Without any vectors it asks the store whether anything is stored at
// all: repair has nothing to embed in an empty archive.
func (e *Engine) noVectorsReason(ctx context.Context) string {
	switch {
	case e.emb == nil && e.opt.EmbedderOff:
		return embedderOff
	case e.emb == nil:
		return "no embedding model is available"
	case !e.loaded:
		return "the vector index is still loading"
	}
	// The read space's census, as Follow asks for it: the store answers
	// again from what it last counted.
	if c, err := e.store.Census(ctx, e.space); err == nil && c.Chunks == 0 {
		return "nothing is stored yet: sweep a vault or save a memory first"
	}
	if e.space == "" {
		return "no vector space exists yet"
	}
	return "the vector space is empty (run `recall repair`)"
}

// rrfK is the reciprocal-rank-fusion constant from Cormack et al. (2009).
const rrfK = 60

// exactBonus lifts a chunk that holds the query (or every quoted phrase)
// verbatim in convex fusion: half the weight of either retriever.
const exactBonus = 0.25

// shape fuses, hydrates, labels, collapses and caps.
// have holds candidates already read from the store; shape reads the rest.
func (e *Engine) shape(ctx context.Context, req recall.SearchRequest, resp recall.SearchResponse, order []*candidate, have map[int64]*recall.StoredChunk) (recall.SearchResponse, error) {
	var ids []int64
	for _, c := range order {
		if have[c.id] == nil {
			ids = append(ids, c.id)
		}
	}
	chunks, err := e.store.ChunksByID(ctx, ids)
	if err != nil {
		return resp, err
	}
	byID := have
	for i := range chunks {
		byID[chunks[i].ID] = &chunks[i]
	}
	quoted, all := exactPhrases(req.Query)
	phrases := textindex.NewPhrases(all)
	// For convex fusion, each score is scaled to [0, 1] over the candidates:
	// BM25 by its best (it is never negative), cosine by min-max (cosines
	// can be negative, and their spread matters more than their level). A
	// candidate the vector search did not return scores as the lowest one
	// that it did: it was merely outside the vector top-k. An exact match of
	// the query or of its quoted phrases adds a bonus, so a verbatim hit
	// ranks above near misses however the vectors fall.
	var maxLex, maxVec, minVec float64
	minVec = 1
	for _, c := range order {
		if c.lexRank > 0 {
			maxLex = max(maxLex, c.lexScore)
		}
		if c.vecRank > 0 {
			maxVec = max(maxVec, c.vecScore)
			minVec = min(minVec, c.vecScore)
		}
	}
	type scored struct {
		c     *candidate
		sc    *recall.StoredChunk
		match []string
	}
	var list []scored
	anyExact := false
	for _, c := range order {
		sc := byID[c.id]
		if sc == nil {
			continue
		}
		exact := phrases.InAll(sc.Text)
		anyExact = anyExact || exact
		titleHit := phrases.InAll(sc.Source.Title + " " + sc.Source.ID)
		var match []string
		if exact {
			match = append(match, "exact")
		}
		if c.vecRank > 0 {
			match = append(match, "semantic")
		}
		if c.lexRank > 0 {
			match = append(match, "text")
		}
		switch {
		case resp.Mode == recall.ModeLexical:
			c.score = c.lexScore
		case resp.Mode == recall.ModeSemantic:
			c.score = c.vecScore
		case e.opt.Fusion == FusionConvex:
			if c.vecRank > 0 && maxVec > minVec {
				c.score += 0.5 * (c.vecScore - minVec) / (maxVec - minVec)
			}
			if c.lexRank > 0 && maxLex > 0 {
				c.score += 0.5 * c.lexScore / maxLex
			}
			if exact {
				c.score += exactBonus
			}
		case e.opt.Fusion == FusionWeighted:
			c.score = c.vecScore
			if exact {
				c.score += 2.0
			}
			if titleHit {
				c.score += 0.6
			}
			if c.lexRank > 0 {
				c.score += 0.1
			}
		default:
			if c.lexRank > 0 {
				c.score += 1.0 / float64(rrfK+c.lexRank)
			}
			if c.vecRank > 0 {
				c.score += 1.0 / float64(rrfK+c.vecRank)
			}
		}
		list = append(list, scored{c, sc, match})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].c.score > list[j].c.score })
	if quoted {
		// Quoting asks for the phrase word for word: only the passages
		// that hold it are ranked. Full text needs the check as much as
		// the vectors: its index matches a phrase by stems ("run late"
		// finds "running late") and in the title. When no passage holds
		// it, full text returns nothing and the vectors the closest
		// passages, saying so.
		switch {
		case anyExact:
			kept := list[:0]
			for _, s := range list {
				if slices.Contains(s.match, "exact") {
					kept = append(kept, s)
				}
			}
			list = kept
		case resp.Mode == recall.ModeLexical:
			list = nil
		default:
			resp.Note = "no passage holds the quoted words exactly; these are the closest"
		}
	} else if resp.Mode == recall.ModeHybrid && len(list) > 0 && !slices.ContainsFunc(list, func(s scored) bool { return s.c.lexRank > 0 }) {
		// Nothing holds a word of the query: the vectors still rank the
		// closest passages, which may be about something else. An
		// assistant reading the results is told so rather than left to
		// take the nearest for a match (a floor on the cosine would be a
		// knob fitted to one model's scale).
		resp.Note = "no passage holds a word of the query; these are the closest in meaning"
	}

	// Collapse identical passages: the best-ranked copy stands for all.
	seenHash := make(map[string]bool)
	perSource := make(map[string]int)
	var hits []recall.Hit
	var hashes []string
	for _, s := range list {
		if len(hits) == req.Limit {
			break
		}
		if seenHash[s.sc.Hash] {
			continue
		}
		if perSource[s.sc.Source.ID] >= req.PerSource {
			continue
		}
		seenHash[s.sc.Hash] = true
		perSource[s.sc.Source.ID]++
		hashes = append(hashes, s.sc.Hash)
		hits = append(hits, recall.Hit{
			Source: recall.PublicID(s.sc.Source.ID), ChunkIndex: s.sc.Index, Kind: s.sc.Source.Kind,
			Owner: s.sc.Source.Owner, Title: s.sc.Source.Title, Date: s.sc.Source.Date, Score: round(s.c.score),
			Match: s.match, Text: s.sc.Text,
		})
	}
	if len(hashes) > 0 {
		others, err := e.store.SourcesByHash(ctx, hashes, req.Filter)
		if err != nil {
			return resp, err
		}
		for i := range hits {
			self := hitID(hits[i])
			for _, src := range others[hashes[i]] {
				if src != self {
					hits[i].AlsoIn = append(hits[i].AlsoIn, recall.PublicID(src))
				}
			}
		}
	}
	if hits == nil {
		hits = []recall.Hit{}
	}
	resp.Results = hits
	return resp, nil
}

// Context returns the chunks around a hit, within the caller's scope, and
// the kind of the source it read. kind ("" for any) says which namespace
// source names: a memory key and an archive file may share a name.
func (e *Engine) Context(ctx context.Context, source string, kind recall.Kind, index, radius int, scope recall.Filter) ([]recall.StoredChunk, recall.Kind, error) {
	if radius < 0 || radius > 3 {
		return nil, "", recall.Errorf(recall.EINVALID, "radius must be between 0 and 3")
	}
	if index < 0 {
		return nil, "", recall.Errorf(recall.EINVALID, "chunk index must be 0 or more")
	}
	if len(source) > recall.MaxSourceIDLen {
		return nil, "", recall.Errorf(recall.EINVALID, "source is longer than %d bytes", recall.MaxSourceIDLen)
	}
	src, err := e.resolve(ctx, source, kind, scope)
	if err != nil {
		if hint := e.exportHint(ctx, err, kind, source, scope); hint != nil {
			return nil, "", hint
		}
		return nil, "", err
	}
	meta := recall.SourceMeta{ID: src.ID, Kind: src.Kind, Title: src.Title, Date: src.Date, Owner: src.Owner, Category: src.Category}
	scope.Since, scope.Until = "", "" // reading around a hit ignores date filters
	if !scope.Allows(&meta) {
		return nil, "", recall.Errorf(recall.ENOTFOUND, "no source %q", source)
	}
	if index >= src.ChunkCount {
		return nil, "", recall.Errorf(recall.ENOTFOUND, "source %q has no chunk %d: its chunk count is %d (numbered from 0)", source, index, src.ChunkCount)
	}
	chunks, err := e.store.Chunks(ctx, src.ID, max(0, index-radius), index+radius)
	return chunks, src.Kind, err
}

// exportHint is the error for a source that is not found because it names
// an export or a folder of conversations, each of which is a source of its
// own ("conversations.json/<id>"): it names a few of them that scope
// allows. It is nil when name holds none. Archive sources are shared by
// every owner, so naming them tells a caller nothing it could not search.
func (e *Engine) exportHint(ctx context.Context, err error, kind recall.Kind, name string, scope recall.Filter) error {
	if !recall.IsNotFound(err) || (kind != "" && kind != recall.KindArchive) || name == "" {
		return nil
	}
	const shown = 3
	page, next, lerr := e.store.ListSources(ctx, recall.ListOptions{
		Filter: recall.Filter{Kinds: []recall.Kind{recall.KindArchive}, SourcePrefix: strings.TrimSuffix(name, "/") + "/"},
		Limit:  shown,
	})
	if lerr != nil {
		return nil
	}
	var ids []string
	scope.Since, scope.Until = "", "" // as Context reads around a hit
	for _, src := range page {
		if scope.Allows(&recall.SourceMeta{ID: src.ID, Kind: src.Kind, Date: src.Date}) {
			ids = append(ids, strconv.Quote(recall.PublicID(src.ID)))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	more := ""
	if next != "" {
		more = ", …"
	}
	return recall.Errorf(recall.ENOTFOUND, "%s: it holds conversations, each a source of its own: give one of them, such as %s%s",
		recall.ErrorMessage(err), strings.Join(ids, ", "), more)
}

// resolve finds the source a client names: a memory key or diary/<date> of
// the caller's owner, or an archive path, of the given kind ("" for any).
// The caller's own memories and diary come first, so that an archive
// source given the same name (anyone allowed to ingest can choose one)
// never stands in for them; the kind a search result carries reaches the
// archive file.
func (e *Engine) resolve(ctx context.Context, name string, kind recall.Kind, scope recall.Filter) (recall.Source, error) {
	var candidates []string
	if kind == "" || kind == recall.KindMemory {
		for _, k := range recall.KeyForms(name) {
			candidates = append(candidates, recall.MemoryID(scope.Owner, k))
		}
	}
	if date, ok := strings.CutPrefix(name, "diary/"); ok && (kind == "" || kind == recall.KindDiary) {
		candidates = append(candidates, recall.DiaryID(scope.Owner, date))
	}
	if kind == "" || kind == recall.KindArchive {
		candidates = append(candidates, name)
	}
	for _, id := range candidates {
		src, err := e.store.Source(ctx, id)
		if err == nil {
			return src, nil
		}
		if !recall.IsNotFound(err) {
			return recall.Source{}, err
		}
	}
	return recall.Source{}, recall.Errorf(recall.ENOTFOUND, "no source %q", name)
}

// exactPhrases returns the folded phrases a chunk must contain to count as
// an exact match: the quoted parts of the query (quoted is true), or else
// the whole query.
func exactPhrases(q string) (quoted bool, phrases []string) {
	var out []string
	for _, p := range textindex.QuotedPhrases(q) {
		out = append(out, textindex.Fold(p))
	}
	if len(out) > 0 {
		return true, out
	}
	if p := strings.TrimSpace(strings.TrimFunc(q, textindex.IsQuote)); p != "" {
		out = append(out, textindex.Fold(p))
	}
	return false, out
}

func round(f float64) float64 {
	return float64(int64(f*1e6+0.5)) / 1e6
}
