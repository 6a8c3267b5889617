package vindex

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/recall-mcp/recall"
)

// Result is one distinct text among the best matches of a search.
type Result struct {
	Key      string  // the key of the vector (a chunk's recall.IndexedChunk.VectorKey), or of its group
	Score    float32 // cosine similarity with the query
	ChunkIDs []int64 // the chunks holding the text that the filter allows, ascending
}

const (
	// rescoreMin is how many candidates beyond k the int8 scores hand to
	// float rescoring (at least k more). Their error is about 0.001; on
	// clustered data a few ranks lie within that of the k-th, and 30 extra
	// candidates held every true top 10 in all measurements (see
	// BenchmarkSearch1M).
	rescoreMin = 32
	// block is how many vectors one kernel call scores: enough to amortise
	// the call, few enough that the scores stay in a stack buffer, and one
	// word of the filter bitmap.
	block = 64
	// minPerWorker keeps small indexes on one goroutine, where starting
	// others costs more than it saves.
	minPerWorker = 16 * 1024
	// segment is the share of the slab a scanning goroutine takes at a time
	// (a multiple of block).
	segment = 128 * block
)

// Search returns the k texts whose vectors are most similar to q (cosine),
// best first, among the chunks for which allow returns true (nil allows
// all). The filter decides before the cut, so k results come back whenever k
// allowed texts exist. allow is called with the index's shared copy of a
// source's attributes, under the index's read lock and from several
// goroutines at once: it must be safe for concurrent use, must not keep or
// change the SourceMeta, and must not call the index. recall.Filter.Allows
// fits.
//
// q must have the index's dimension (ECONFLICT) and a finite non-zero length
// (EINVALID). An error from the FetchFunc is returned as is.
func (x *Index) Search(ctx context.Context, q []float32, k int, allow func(*recall.SourceMeta) bool) ([]Result, error) {
	return x.SearchKeyed(ctx, q, k, allow, "")
}

// SearchKeyed is Search for a filter that key names: two filters with the
// same key must allow the same sources. The bitmap of vectors the filter
// allows, a pass over every chunk, is then kept until the index changes, so
// repeated searches with one filter (a server's requests under one token)
// skip that pass. An empty key is not kept.
func (x *Index) SearchKeyed(ctx context.Context, q []float32, k int, allow func(*recall.SourceMeta) bool, key string) ([]Result, error) {
	return x.search(ctx, q, k, allow, key, x.fetch != nil)
}

// SearchCodes is SearchKeyed without float rescoring: scores are the int8
// codes' (off by about 0.001 in cosine), so the top k may differ from a
// float search by near ties, at no cost in store reads. For callers that
// blend the scores with others, where such ties do not decide.
func (x *Index) SearchCodes(ctx context.Context, q []float32, k int, allow func(*recall.SourceMeta) bool, key string) ([]Result, error) {
	return x.search(ctx, q, k, allow, key, false)
}

func (x *Index) search(ctx context.Context, q []float32, k int, allow func(*recall.SourceMeta) bool, key string, rescore bool) ([]Result, error) {
	if len(q) != x.dim {
		return nil, recall.Errorf(recall.ECONFLICT, "query vector has %d dimensions, the index %d", len(q), x.dim)
	}
	u, ok := unit(q)
	if !ok {
		return nil, recall.Errorf(recall.EINVALID, "query vector is zero or not finite")
	}
	if k <= 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	qc := make([]int16, 2*x.stride)
	qscale := encodeQuery(qc, u, queryBound(x.dim))

	pool := k
	if rescore {
		pool = k + max(k, rescoreMin)
	}
	res := x.candidates(qc, qscale, pool, allow, key, rescore)
	if len(res) == 0 {
		return nil, nil
	}
	if rescore {
		if err := x.rescore(ctx, u, res); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(res, func(a, b Result) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if x.group != nil && rescore {
		// Several vectors of a group were rescored: keep each group's best.
		seen := make(map[string]bool, len(res))
		res = slices.DeleteFunc(res, func(r Result) bool {
			g := x.group(r.Key)
			if seen[g] {
				return true
			}
			seen[g] = true
			return false
		})
	}
	return res[:min(k, len(res))], nil
}

// groupSlack is how far below its group's best int8 score a vector may lie
// and still be rescored with it: a few times the codes' error, so the
// group's exact best is among those rescored.
const groupSlack = 0.01

// candidates scans every allowed vector and returns the best pool of them
// with approximate scores and their allowed chunks. Everything it returns is
// copied out under the read lock, so rescoring needs no lock while it waits
// for the store.
//
// In a grouped index it returns the best vector of each of the best pool
// groups; with rescore, also the vectors of those groups that the codes put
// within groupSlack of their group's best, since float scores may order them
// otherwise.
func (x *Index) candidates(qc []int16, qscale float32, pool int, allow func(*recall.SourceMeta) bool, key string, rescore bool) []Result {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.hashes)
	if n == 0 {
		return nil
	}
	var allowed []uint64
	if allow != nil {
		cached := false
		if key != "" {
			allowed, cached = x.bitmaps.get(x.gen, key)
		}
		if !cached {
			allowed = x.allowed(allow)
			if key != "" {
				x.bitmaps.put(x.gen, key, allowed)
			}
		}
		if allowed == nil {
			return nil
		}
	}
	var top, cands []candidate
	for first := firstPass(pool); ; first *= 4 {
		cands = x.refine(qc, x.scan(qc, qscale, allowed, first))
		var full bool
		top, full = x.best(cands, pool)
		// The scan keeps first vectors: when some groups filled them so
		// that fewer than pool groups made it, vectors it dropped may
		// hold the rest.
		if x.group == nil || full || len(cands) < first {
			break
		}
	}
	if x.group != nil && rescore {
		bestOf := make(map[string]float32, len(top))
		for _, c := range top {
			bestOf[x.group(x.hashes[c.v])] = c.score
		}
		top = make([]candidate, 0, len(top))
		for _, c := range cands {
			if b, ok := bestOf[x.group(x.hashes[c.v])]; ok && (b-c.score)*qscale <= groupSlack {
				top = append(top, c)
			}
		}
	}
	res := make([]Result, len(top))
	for i, c := range top {
		res[i] = Result{Key: x.hashes[c.v], Score: c.score * qscale, ChunkIDs: x.chunksOf(c.v, allow)}
	}
	return res
}

// allowed returns a bitmap of the vectors that at least one allowed chunk
// holds, or nil when there are none. Chunks of a source mostly sit next to
// each other in the slab, so the predicate runs about once per source; that
// can still be a hundred thousand calls, so large indexes split the chunks
// across cores.
func (x *Index) allowed(allow func(*recall.SourceMeta) bool) []uint64 {
	words := (len(x.hashes) + block - 1) / block
	n := len(x.ids)
	workers := min(runtime.GOMAXPROCS(0), (n+minPerWorker-1)/minPerWorker)
	// Each worker marks a bitmap of its own: plain writes, merged at the end.
	maps := make([][]uint64, max(workers, 1))
	found := make([]bool, len(maps))
	mark := func(w, lo, hi int) {
		bm := make([]uint64, words)
		var last *sourceRef
		var ok bool
		for s := lo; s < hi; s++ {
			if r := x.metas[s]; r != last {
				last, ok = r, allow(&r.meta)
			}
			if ok {
				v := x.vecOf[s]
				bm[v/block] |= 1 << (v % block)
				found[w] = true
			}
		}
		maps[w] = bm
	}
	if workers <= 1 {
		mark(0, 0, n)
	} else {
		per := (n + workers - 1) / workers
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { mark(w, w*per, min((w+1)*per, n)) })
		}
		wg.Wait()
	}
	if !slices.Contains(found, true) {
		return nil
	}
	bm := maps[0]
	for _, m := range maps[1:] {
		for i, b := range m {
			bm[i] |= b
		}
	}
	return bm
}

func (x *Index) chunksOf(v int32, allow func(*recall.SourceMeta) bool) []int64 {
	var ids []int64
	for s := x.heads[v]; s >= 0; s = x.next[s] {
		if allow == nil || allow(&x.metas[s].meta) {
			ids = append(ids, x.ids[s])
		}
	}
	slices.Sort(ids)
	return ids
}

type candidate struct {
	score float32 // approximate score, without the query's scale
	v     int32
	dhi   int32 // dot product of the query with the vector's high digits
}

// firstPass is how many candidates the scan of high digits keeps for the
// exact int8 scores to choose pool from. Dropping the low digits errs by up
// to 7.5 steps a component: about 0.01 in cosine, where some hundreds of
// vectors of a dense cluster can lie. A few hundred random reads of low
// digits cost nothing next to the scan.
func firstPass(pool int) int { return max(8*pool, 512) }

// scanQuery is the query as the scan multiplies it: its 15-bit codes, or
// where dotDigits8 has a kernel of its own (fastDotDigits8) the codes
// scaled to signed bytes and split as the plane is laid out. Eight bits of
// query against four bits of vector only choose candidates; their
// high-digit products are computed again with the full codes (refine).
type scanQuery struct {
	q16      []int16
	lo8, hi8 []int8
	bytes    bool    // scan with lo8, hi8
	offset   float32 // see scan
	cos      float32 // turns a scan score into an approximate cosine
}

func (x *Index) newScanQuery(qc []int16, qscale float32) scanQuery {
	sq := scanQuery{q16: qc, cos: qscale}
	var sum int64
	if fastDotDigits8() && x.stride%64 == 0 {
		var m int16
		for _, c := range qc {
			m = max(m, c, -c)
		}
		q8 := make([]int8, len(qc))
		sq.cos = qscale * float32(m) / 127
		if m > 0 {
			for i, c := range qc {
				q8[i] = int8(math.Round(float64(c) * 127 / float64(m)))
				sum += int64(q8[i])
			}
		}
		sq.lo8, sq.hi8, sq.bytes = make([]int8, x.stride), make([]int8, x.stride), true
		splitQuery8(sq.lo8, sq.hi8, q8)
	} else {
		for _, c := range qc {
			sum += int64(c)
		}
	}
	// With the low digit taken as its mean, 7.5, the int8 code is
	// 16·high + 7.5 − 128, so Σ q·c ≈ 16·dhi − 120.5·Σ q.
	sq.offset = float32(120.5 * float64(sum))
	return sq
}

func (sq *scanQuery) dot(plane []byte, stride int, out []int32) {
	if sq.bytes {
		dotDigits8(sq.lo8, sq.hi8, plane, stride, out)
	} else {
		dotDigits(sq.q16, plane, stride, out)
	}
}

// scan returns the best candidates by high digits, at most first of them,
// splitting the slab across cores.
func (x *Index) scan(qc []int16, qscale float32, allowed []uint64, first int) []candidate {
	sq := x.newScanQuery(qc, qscale)
	var all heap
	if n := len(x.hashes); n >= signsMin && 8*first < n {
		all, _ = x.scanBySigns(&sq, x.querySigns(qc), allowed, first)
	} else {
		all = x.scanParallel(&sq, allowed, first)
	}
	if sq.bytes {
		// The scan's products were of the byte query: those of the full
		// codes are what refine adds the low digits to.
		var d [1]int32
		for i, c := range all {
			dotDigits(qc, x.hi[int(c.v)*x.stride:int(c.v+1)*x.stride], x.stride, d[:])
			all[i].dhi = d[0]
		}
	}
	return all
}

// scanParallel runs scanRange over the whole slab on every core.
func (x *Index) scanParallel(sq *scanQuery, allowed []uint64, first int) heap {
	n := len(x.hashes)
	workers := min(runtime.GOMAXPROCS(0), (n+minPerWorker-1)/minPerWorker)
	if workers <= 1 {
		return x.scanRange(sq, allowed, 0, n, make(heap, 0, first), first)
	}
	// Workers take segments as they go rather than a fixed share, so one
	// slowed by other load on its core leaves the rest to the others.
	var next atomic.Int64
	tops := make([]heap, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			top := make(heap, 0, first)
			for {
				lo := int(next.Add(segment)) - segment
				if lo >= n {
					break
				}
				top = x.scanRange(sq, allowed, lo, min(lo+segment, n), top, first)
			}
			tops[w] = top
		})
	}
	wg.Wait()
	all := tops[0]
	for _, t := range tops[1:] {
		for _, c := range t {
			all = all.push(c, first)
		}
	}
	return all
}

// scanRange scores the vectors [lo, hi) that allowed lets through by their
// high digits and keeps the best first of them in top.
func (x *Index) scanRange(sq *scanQuery, allowed []uint64, lo, hi int, top heap, first int) heap {
	var buf [block]int32
	st := x.stride
	offset := sq.offset
	for b := lo; b < hi; b += block {
		e := min(b+block, hi)
		mask := ^uint64(0)
		if allowed != nil {
			if mask = allowed[b/block]; mask == 0 {
				continue
			}
		}
		out := buf[:e-b]
		sq.dot(x.hi[b*st:e*st], st, out)
		for mask != 0 && len(out) > 0 {
			i := bits.TrailingZeros64(mask)
			mask &= mask - 1
			if i >= len(out) {
				break
			}
			s := (16*float32(out[i]) - offset) * x.scales[b+i]
			if len(top) < first || s > top[0].score {
				top = top.push(candidate{s, int32(b + i), out[i]}, first)
			}
		}
	}
	return top
}

// refine completes the int8 scores of the scan's candidates with their low
// digits and returns them best first.
func (x *Index) refine(qc []int16, cands []candidate) []candidate {
	var sum int64
	for _, c := range qc {
		sum += int64(c)
	}
	st := x.stride
	var dlo [1]int32
	for i, c := range cands {
		dotDigits(qc, x.lo[int(c.v)*st:int(c.v+1)*st], st, dlo[:])
		full := 16*int64(c.dhi) + int64(dlo[0]) - 128*sum
		cands[i].score = float32(full) * x.scales[c.v]
	}
	return heap(cands).sorted()
}

// best returns the first pool of sorted candidates, or in a grouped index
// the first of each group until pool groups are found; full reports that
// pool were.
func (x *Index) best(sorted []candidate, pool int) (top []candidate, full bool) {
	if x.group == nil {
		return sorted[:min(pool, len(sorted))], len(sorted) >= pool
	}
	seen := make(map[string]bool, pool)
	top = make([]candidate, 0, pool)
	for _, c := range sorted {
		g := x.group(x.hashes[c.v])
		if seen[g] {
			continue
		}
		seen[g] = true
		top = append(top, c)
		if len(top) == pool {
			return top, true
		}
	}
	return top, false
}

// rescore replaces the approximate scores of res with exact cosines from the
// stored float vectors. A text the store no longer has a vector for (it is
// being deleted) keeps its approximate score.
func (x *Index) rescore(ctx context.Context, u []float32, res []Result) error {
	hashes := make([]string, len(res))
	for i, r := range res {
		hashes[i] = r.Key
	}
	vecs, err := x.fetch(ctx, hashes)
	if err != nil {
		return err
	}
	for i := range res {
		vec, ok := vecs[res[i].Key]
		if !ok {
			continue
		}
		if len(vec) != x.dim {
			return recall.WrapError(recall.EINTERNAL, fmt.Errorf("stored vector for %s has %d dimensions, the index %d", res[i].Key, len(vec), x.dim), "vector index out of step with the store")
		}
		w, ok := unit(vec)
		if !ok {
			continue
		}
		res[i].Score = dot(u, w)
	}
	return nil
}

// heap is a min-heap on score of at most pool candidates: its root is the
// weakest kept, the one a better candidate replaces.
type heap []candidate

func (h heap) push(c candidate, pool int) heap {
	if len(h) < pool {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !h.less(i, p) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		return h
	}
	if !less(h[0], c) {
		return h
	}
	h[0] = c
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h heap) less(i, j int) bool { return less(h[i], h[j]) }

// less orders by score, then by slot so that equal scores rank the same way
// however the scan was split.
func less(a, b candidate) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.v > b.v
}

func (h heap) sorted() []candidate {
	slices.SortFunc(h, func(a, b candidate) int {
		if less(a, b) {
			return 1
		}
		if less(b, a) {
			return -1
		}
		return 0
	})
	return h
}
