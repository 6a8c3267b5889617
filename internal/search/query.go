package search

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/lexindex"
	"github.com/recall-mcp/recall/internal/textindex"
)

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
	callerDeadline, hasDeadline := ctx.Deadline()
	ctx, cancel := context.WithTimeoutCause(ctx, e.opt.Budget, errSearchBudget)
	defer cancel()
	deadline, _ := ctx.Deadline()
	reserve := fullTextReserve(time.Until(deadline))
	q := &queryVec{wait: embedWait{
		until:   deadline.Add(-reserve),
		reserve: reserve,
		caller:  hasDeadline && !callerDeadline.After(deadline),
	}}
	// A single retriever ranks by its own scores: it over-fetches so that
	// collapsing duplicates and capping per source still fill the page.
	// Hybrid scales each cosine against the weakest vector candidate's, so
	// the depth of its candidate lists decides ranks: it is the same for
	// every page up to 10 results of 2 per source, so the top of a page does
	// not depend on how long a page was asked for. (Each candidate costs a
	// read of its text; 40 of each kind fill such a page.)
	want := max(30, req.Limit*req.PerSource*4)
	depth := max(40, req.Limit*req.PerSource*2)
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
	// Past the point where it gave up waiting for the embedder, the time
	// left is kept for answering: a search goes no deeper then, and
	// answers with the page it has.
	for f := 4; err == nil && more && len(resp.Results) < req.Limit && depth*f <= maxDepth && time.Now().Before(q.wait.until); f *= 4 {
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
	late    bool   // the search stopped waiting for the embedding to answer before its deadline
	retries int    // passes run again after a switch of the read space
	wait    embedWait
}

// reset forgets the query's vector, after a switch of the read space.
func (q *queryVec) reset(retries int) {
	*q = queryVec{retries: retries, wait: q.wait}
}

// embedWait is how long a search waits for its query's embedding.
type embedWait struct {
	until   time.Time     // its deadline less reserve
	reserve time.Duration // kept for answering without the vector
	caller  bool          // the deadline is the caller's, not the search's budget
}

// The bounds of fullTextReserve.
const (
	minFullTextReserve = 25 * time.Millisecond
	maxFullTextReserve = time.Second
)

// fullTextReserve is the part of the time left before a search's deadline
// that it keeps for answering without its query's vector: a hybrid search
// stops waiting for the embedding that much before the deadline, and
// answers from full text, where waiting to the deadline left it nothing
// but the context's error (a client whose deadline is shorter than the
// embed budget got no answer while the embedder hung); a semantic search,
// which has no fallback, fails then with a clear error, and a vector that
// came later would have left its vector leg no time either.
//
// The full-text leg starts with the embedding and runs beside it, so what
// is left to do when the wait ends is its tail, reading the texts of the
// page, and deeper passes for a page the per-source cap left short: with
// the in-memory index a lexical search takes a few milliseconds (a REST
// search from full text answers in about 2 ms, BENCHMARKS.md), the
// store's index 15 ms at 100,000 chunks and 100 ms for a query of common
// words. A quarter of the time left grows with a slow machine or store as
// that work does, where a fixed reserve would fit one of them; the floor
// keeps enough for the in-memory index under any deadline (a search with
// less than that left does not wait for the embedder at all), and the cap
// keeps a deadline well beyond the embed budget from giving the embedder
// less than before: a server's 5 s search over its 2 s embed budget, a
// command's 65 s over its minute. A caller without a deadline of its own
// waits as before.
func fullTextReserve(left time.Duration) time.Duration {
	return min(max(left/4, minFullTextReserve), maxFullTextReserve)
}

// awaitEmbedding waits for a search's query embedding until w.until, or
// until ctx ends; late says it gave up at w.until. The embedding goes on
// without it (queryEmbedding), unless its caller went away (ctx was
// cancelled, not timed out) and so did every other search waiting for it.
func (e *Engine) awaitEmbedding(ctx context.Context, k flightKey, f *queryFlight, w embedWait) (vec []float32, err error, late bool) {
	t := time.NewTimer(time.Until(w.until))
	defer t.Stop()
	select {
	case <-f.done:
		return f.out.vec, f.out.err, false
	case <-t.C:
		select {
		case <-f.done: // it came as the wait ended
			return f.out.vec, f.out.err, false
		default:
		}
		whose := "the search's budget"
		if w.caller {
			whose = "the caller's deadline"
		}
		return nil, recall.Errorf(recall.EUNAVAILABLE, "the embedder had not answered %s before %s, the time kept for the rest of the search", w.reserve.Round(time.Millisecond), whose), true
	case <-ctx.Done():
		// The caller left: the search goes on as far as its context
		// lets it, and the embedding with its own budget while someone
		// may still want its outcome. A caller whose deadline passed
		// keeps it going (its outcome tells of a hanging embedder); one
		// that went away (a client that closed its connection or sent
		// notifications/cancelled) gives it up.
		if errors.Is(ctx.Err(), context.Canceled) {
			e.abandon(k, f)
		}
		return nil, e.budgetError(context.Cause(ctx)), false
	}
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
	vec []float32
	err error
}

// flightKey names a query embedding in flight: its embedder (the read
// space's when it began) and the query.
type flightKey struct {
	emb   recall.Embedder
	query string
}

// queryFlight is one query being embedded for the searches that asked for
// it (see queryEmbedding).
type queryFlight struct {
	done  chan struct{}
	out   embedOut // set before done closes
	probe bool     // a search was admitted to it as the breaker's probe (under e.flightMu)
	// claims counts the searches that hold the embedding to its end (under
	// e.flightMu): each that asks for it, until it leaves because its
	// caller went away. A search whose deadline or budget ran out keeps
	// its claim, so a hanging embedder is still found out for callers
	// with short deadlines; when every claim is gone the embedding is
	// cancelled (abandon), freeing the embedder's slot at once.
	claims    int
	abandoned bool // every claim was given up: a search asking now starts another
	cancel    context.CancelCauseFunc
}

// queryEmbedding returns the embedding in flight of query with emb,
// starting one when there is none; probe says the breaker admitted the
// caller as its probe. The embedding runs detached from the callers'
// contexts, within its own budget, and its outcome opens or closes the
// breaker, and fills the query cache, whether or not anyone still waits:
// a caller whose own deadline is shorter than the budget left before the
// embedder answered, which told nothing, so an embedder that hung was
// never found out by such clients and every search of theirs waited out
// its deadline. Concurrent searches for one query share one embedding, so
// at most one goroutine per distinct query outlives its callers, and none
// outlives the budget.
func (e *Engine) queryEmbedding(ctx context.Context, emb recall.Embedder, query string, probe bool) *queryFlight {
	k := flightKey{emb, query}
	e.flightMu.Lock()
	defer e.flightMu.Unlock()
	if f, ok := e.flights[k]; ok && !f.abandoned {
		// The embedding in flight answers this caller's question too;
		// its outcome is the probe's news.
		f.probe = f.probe || probe
		f.claims++
		if e.joined != nil {
			e.joined()
		}
		return f
	}
	if e.flights == nil {
		e.flights = map[flightKey]*queryFlight{}
	}
	fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	f := &queryFlight{done: make(chan struct{}), probe: probe, claims: 1, cancel: cancel}
	e.flights[k] = f
	go e.fly(fctx, k, f)
	return f
}

// errAbandoned ends an embedding whose every caller went away: it says
// nothing of the embedder.
var errAbandoned = errors.New("every search waiting for the query's embedding went away")

// abandon gives up a search's claim on the embedding of k in flight, its
// caller having gone away; the last claim given up cancels the embedding,
// and a search that asks for the query afterwards starts another.
func (e *Engine) abandon(k flightKey, f *queryFlight) {
	e.flightMu.Lock()
	defer e.flightMu.Unlock()
	if f.claims--; f.claims > 0 {
		return
	}
	f.abandoned = true
	f.cancel(errAbandoned)
}

// fly embeds a flight's query and publishes the outcome: to the breaker
// first, so that a search its caller starts next finds it there.
func (e *Engine) fly(ctx context.Context, k flightKey, f *queryFlight) {
	out := e.embedQuery(ctx, k.emb, k.query)
	if out.err == nil {
		// A vector of the wrong size fails, as it would for every query.
		e.mu.RLock()
		if e.emb == k.emb && e.vecReady() {
			if err := e.checkDim(out.vec); err != nil {
				out = embedOut{err: err}
			}
		}
		e.mu.RUnlock()
	}
	e.flightMu.Lock()
	if e.flights[k] == f {
		delete(e.flights, k)
	}
	probe := f.probe
	e.flightMu.Unlock()
	f.cancel(nil)
	e.brk.report(k.emb, probe, out.err, e.opt.Now())
	f.out = out
	close(f.done)
}

// checkDim refuses a query vector whose size is not the read space's
// (under e.mu, when vecReady).
func (e *Engine) checkDim(vec []float32) error {
	if len(vec) != e.vecDim() {
		return recall.Errorf(recall.ECONFLICT, "the embedder returned a %d-dimensional query vector for a %d-dimensional space", len(vec), e.vecDim())
	}
	return nil
}

// embedQuery embeds a search's query with emb, within the embed budget,
// or the search's when that is shorter (ctx must not end sooner).
func (e *Engine) embedQuery(ctx context.Context, emb recall.Embedder, query string) embedOut {
	budget, cause := e.opt.EmbedBudget, errEmbedBudget
	if e.opt.Budget < budget {
		budget, cause = e.opt.Budget, errSearchBudget
	}
	ectx, cancel := context.WithTimeoutCause(ctx, budget, cause)
	defer cancel()
	vecs, err := emb.Embed(ectx, recall.InputQuery, []string{query})
	if err != nil && ectx.Err() != nil {
		// Say whose wait ended rather than "context deadline exceeded".
		err = e.budgetError(context.Cause(ectx))
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

// budgetError says which budget ran out while a query was embedded, cause
// being the cause of the context that ended; any other cause is returned
// as it is.
func (e *Engine) budgetError(cause error) error {
	switch cause {
	case errEmbedBudget:
		return recall.Errorf(recall.EUNAVAILABLE, "the embedder did not answer within %s", e.opt.EmbedBudget)
	case errSearchBudget:
		return recall.Errorf(recall.EUNAVAILABLE, "the embedder did not answer within the search's time (%s)", e.opt.Budget)
	}
	return cause
}

// search is one pass of Search over the first want (single retriever) or
// depth (hybrid) candidates of each retriever. more reports whether a
// retriever had candidates beyond those.
func (e *Engine) search(ctx context.Context, req recall.SearchRequest, want, depth int, q *queryVec) (resp recall.SearchResponse, more bool, err error) {
	// Full text needs no query vector: it runs, and its candidates are
	// read from the store, while the query is embedded and the vectors are
	// searched. The query is embedded before the engine's lock is taken: a
	// slow embedder must not hold up writers.
	var embedding *queryFlight
	e.mu.RLock()
	emb := e.emb
	e.mu.RUnlock()
	if q.done && q.emb != emb {
		q.reset(q.retries) // the read space switched since the query was embedded
	}
	if req.Mode != recall.ModeLexical && emb != nil && !q.done {
		q.emb = emb
		probe, why, cause := e.brk.admit(emb, e.opt.Now())
		if why == "" {
			embedding = e.queryEmbedding(ctx, emb, req.Query, probe)
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
	if embedding != nil {
		q.vec, q.err, q.late = e.awaitEmbedding(ctx, flightKey{emb, req.Query}, embedding, q.wait)
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
	if !switched && qvec != nil && vecReady {
		// The flight checked its vector only if the index was loaded
		// then, and a cached vector was not checked.
		if err := e.checkDim(qvec); err != nil {
			qvec, embedErr = nil, err
		}
	}
	if switched {
		// The read space switched while the query was embedded: its vector
		// is of the other model. Search runs the pass again, up to
		// maxSwitchRetries times.
		if q.retries < maxSwitchRetries {
			q.reset(q.retries + 1)
			return resp, false, errSwitched
		}
		qvec, embedErr = nil, recall.Errorf(recall.EUNAVAILABLE, "the read space switched during the search")
		q.reset(q.retries)
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
			switch {
			case q.skipped != "":
				resp.Note = q.skipped + "; searched full text only"
			case q.late:
				resp.Note = lateNote + "; searched full text only"
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
	case resp.Mode == recall.ModeSemantic && qvec == nil && q.late:
		return resp, false, recall.WrapError(recall.EUNAVAILABLE, embedErr, "semantic search is unavailable: %s", lateNote)
	case resp.Mode == recall.ModeSemantic && qvec == nil && ctx.Err() != nil && context.Cause(ctx) != errSearchBudget:
		// The caller left (an MCP client cancelled its call): the
		// search was canceled, and the embedder is not at fault.
		return resp, false, ctx.Err()
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

// lateNote is what a search tells its client when it stopped waiting for
// its query's embedding to answer before its deadline (fullTextReserve).
const lateNote = "the query embedder did not answer in time"

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
