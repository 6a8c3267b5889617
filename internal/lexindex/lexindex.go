// Package lexindex is an in-memory inverted index over chunk terms that ranks
// by exactly the BM25 that SQLite FTS5's bm25() computes for recall's
// full-text table, for long-running processes (recall serve and recall mcp).
//
// FTS5 answers every full-text query correctly, but its bm25() counts the
// rows holding each query word by reading the word's whole doclist and
// looks up each ranked row's size with a statement of its own; in pure-Go
// SQLite a query of common words over 100,000 chunks took 100 ms to rank
// exactly, so the store's planner ranks at most a budget of rows and its top
// 10 agreed only 61% with exact BM25 there. This index holds, per term, the
// chunks that contain it with their weighted term frequency, and each
// chunk's length, so a query reads only its words' postings: exact BM25 over
// every matching chunk in about a millisecond.
//
// It answers queries of plain words (textindex units of one token, no
// prefix); phrases and single CJK characters go to the store, whose index
// holds positions. Terms come from textindex, as the store's index takes
// them, so both index the same terms.
//
// Removal marks a chunk dead; its postings are skipped, and dropped when the
// dead ones pass a quarter of all postings (compaction rebuilds the lists).
// Document frequencies count live chunks only, as FTS5's do.
//
// A search counts each text once, as the store's full-text search does: of
// the chunks holding one text, only the best ranked is a result.
package lexindex

import (
	"hash/maphash"
	"math"
	"slices"
	"sync"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/textindex"
)

// BM25 parameters as FTS5 fixes them, and recall's column weights (the
// store's rankExpr: title 2.0, body 1.0).
const (
	k1          = 1.2
	b           = 0.75
	titleWeight = 2.0
	bodyWeight  = 1.0
)

// Index is safe for concurrent use.
type Index struct {
	mu     sync.RWMutex
	termID map[string]int32
	post   []postings // by term id
	docs   []doc      // by slot
	slot   map[int64]int32
	metas  []*recall.SourceMeta        // one shared copy per source
	metaOf map[recall.SourceMeta]int32 // its index in metas

	live      int   // live chunks
	liveLen   int64 // tokens in live chunks (title and body)
	livePosts int   // postings of live chunks
	deadPosts int   // postings of dead chunks not yet compacted away

	scratch sync.Pool // *[]float64, one score per slot
}

type postings struct {
	slots []int32
	freq  []float32 // titleWeight × title count + bodyWeight × body count
}

type doc struct {
	id     int64
	text   uint64 // textKey of its text's hash
	length int32  // tokens, title and body (FTS5's column size of the row)
	terms  int32  // distinct terms: its postings
	meta   int32  // index in metas
	dead   bool
}

// New returns an empty index.
func New() *Index {
	return &Index{termID: map[string]int32{}, slot: map[int64]int32{}, metaOf: map[recall.SourceMeta]int32{}}
}

// Len returns the number of live chunks.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// Has reports whether the chunk with the given id is indexed.
func (x *Index) Has(id int64) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.slot[id]
	return ok
}

// IDs returns the ids of the live chunks, ascending.
func (x *Index) IDs() []int64 {
	x.mu.RLock()
	ids := make([]int64, 0, x.live)
	for id := range x.slot {
		ids = append(ids, id)
	}
	x.mu.RUnlock()
	slices.Sort(ids)
	return ids
}

// textSeed keys texts by a 64-bit hash of their text hash: two texts share
// a key about once in 2^64 pairs, where the full hashes would cost 64 bytes
// a chunk.
var textSeed = maphash.MakeSeed()

func textKey(hash string) uint64 { return maphash.String(textSeed, hash) }

// Add indexes a chunk from its text's hash (recall.TextHash) and the terms
// of its source title and of its text (textindex.Terms of each), replacing
// any chunk with the same id.
func (x *Index) Add(id int64, meta recall.SourceMeta, hash string, title, body []string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(id)
	freq := make(map[string]float32, len(body)/2+len(title))
	for _, t := range title {
		freq[t] += titleWeight
	}
	for _, t := range body {
		freq[t] += bodyWeight
	}
	m, ok := x.metaOf[meta]
	if !ok {
		m = int32(len(x.metas))
		x.metas = append(x.metas, &meta)
		x.metaOf[meta] = m
	}
	s := int32(len(x.docs))
	x.docs = append(x.docs, doc{id: id, text: textKey(hash), length: int32(len(title) + len(body)), terms: int32(len(freq)), meta: m})
	x.slot[id] = s
	for t, f := range freq {
		tid, ok := x.termID[t]
		if !ok {
			tid = int32(len(x.post))
			x.termID[t] = tid
			x.post = append(x.post, postings{})
		}
		p := &x.post[tid]
		p.slots = append(p.slots, s)
		p.freq = append(p.freq, f)
	}
	x.live++
	x.liveLen += int64(len(title) + len(body))
	x.livePosts += len(freq)
}

// Remove drops the chunks with the given ids; missing ids are ignored.
func (x *Index) Remove(ids ...int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		x.remove(id)
	}
	if x.deadPosts > 1024 && x.deadPosts > x.livePosts/4 {
		x.compact()
	}
}

func (x *Index) remove(id int64) {
	s, ok := x.slot[id]
	if !ok {
		return
	}
	delete(x.slot, id)
	d := &x.docs[s]
	d.dead = true
	x.live--
	x.liveLen -= int64(d.length)
	x.livePosts -= int(d.terms)
	x.deadPosts += int(d.terms)
}

// compact rebuilds the postings and slots without dead chunks.
func (x *Index) compact() {
	remap := make([]int32, len(x.docs))
	docs := make([]doc, 0, x.live)
	for s, d := range x.docs {
		remap[s] = -1
		if !d.dead {
			remap[s] = int32(len(docs))
			x.slot[d.id] = int32(len(docs))
			docs = append(docs, d)
		}
	}
	for tid := range x.post {
		p := &x.post[tid]
		n := 0
		for i, s := range p.slots {
			if r := remap[s]; r >= 0 {
				p.slots[n], p.freq[n] = r, p.freq[i]
				n++
			}
		}
		p.slots, p.freq = slices.Clip(p.slots[:n]), slices.Clip(p.freq[:n])
	}
	remeta := make([]int32, len(x.metas))
	for i := range remeta {
		remeta[i] = -1
	}
	var metas []*recall.SourceMeta
	clear(x.metaOf)
	for i := range docs {
		m := docs[i].meta
		if remeta[m] < 0 {
			remeta[m] = int32(len(metas))
			x.metaOf[*x.metas[m]] = remeta[m]
			metas = append(metas, x.metas[m])
		}
		docs[i].meta = remeta[m]
	}
	x.metas = metas
	x.docs = docs
	x.deadPosts = 0
}

// Search returns up to k chunks holding any of the terms that allow accepts
// (nil: all), best first, scored by BM25 as FTS5's bm25() with recall's
// column weights scores them (negated: higher is better), one per text:
// the best of the chunks holding it. Duplicate terms count once. Ties go
// to the newer chunk (the larger id).
func (x *Index) Search(terms []string, k int, allow func(*recall.SourceMeta) bool) []recall.Candidate {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 || k <= 0 {
		return nil
	}
	n := float64(x.live)
	avgdl := float64(x.liveLen) / n
	if avgdl <= 0 {
		avgdl = 1
	}
	sp, _ := x.scratch.Get().(*[]float64)
	if sp == nil || len(*sp) < len(x.docs) {
		s := make([]float64, len(x.docs))
		sp = &s
	}
	scores := (*sp)[:len(x.docs)]
	defer x.scratch.Put(sp)
	var touched []int32
	seen := make(map[int32]bool, len(terms))
	for _, t := range terms {
		tid, ok := x.termID[t]
		if !ok || seen[tid] {
			continue
		}
		seen[tid] = true
		p := &x.post[tid]
		hits := len(p.slots)
		if x.deadPosts > 0 {
			hits = 0
			for _, s := range p.slots {
				if !x.docs[s].dead {
					hits++
				}
			}
		}
		if hits == 0 {
			continue
		}
		idf := math.Log((n - float64(hits) + 0.5) / (float64(hits) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		norm := k1 * b / avgdl
		for i, s := range p.slots {
			d := &x.docs[s]
			if d.dead {
				continue
			}
			f := float64(p.freq[i])
			if scores[s] == 0 {
				touched = append(touched, s)
			}
			scores[s] += idf * (f * (k1 + 1)) / (f + k1*(1-b) + norm*float64(d.length))
		}
	}
	// Evaluate the filter once per source, then keep the best k.
	var verdict []int8 // by source: 0 not asked yet, 1 allowed, -1 refused
	if allow != nil {
		verdict = make([]int8, len(x.metas))
	}
	top := make([]recall.Candidate, 0, min(k, len(touched)))
	texts := make([]uint64, 0, cap(top))   // the text of each kept candidate
	kept := make(map[uint64]int, cap(top)) // the index in top of each kept text
	worst := func() int {                  // index of the weakest kept candidate
		w := 0
		for i := 1; i < len(top); i++ {
			if better(top[w], top[i]) {
				w = i
			}
		}
		return w
	}
	w := -1
	for _, s := range touched {
		c := recall.Candidate{ChunkID: x.docs[s].id, Score: scores[s]}
		scores[s] = 0
		if allow != nil {
			m := x.docs[s].meta
			if verdict[m] == 0 {
				verdict[m] = -1
				if allow(x.metas[m]) {
					verdict[m] = 1
				}
			}
			if verdict[m] < 0 {
				continue
			}
		}
		// A candidate no better than the weakest kept cannot enter, nor
		// better its text's kept chunk (which is no weaker); only those
		// that can are looked up by text.
		if len(top) == k {
			if w < 0 {
				w = worst()
			}
			if !better(c, top[w]) {
				continue
			}
		}
		t := x.docs[s].text
		if i, ok := kept[t]; ok {
			if better(c, top[i]) {
				top[i], w = c, -1
			}
			continue
		}
		if len(top) < k {
			kept[t] = len(top)
			top, texts = append(top, c), append(texts, t)
			w = -1
			continue
		}
		delete(kept, texts[w])
		kept[t] = w
		top[w], texts[w], w = c, t, -1
	}
	slices.SortFunc(top, func(a, b recall.Candidate) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	return top
}

// QueryTerms returns the index terms of a parsed query, distinct, in order,
// and whether the index can answer it: a query of plain words, without
// quoted phrases and without prefix units (a lone CJK character), which
// need the positions only the store's index holds.
func QueryTerms(q textindex.Query) ([]string, bool) {
	if len(q.Phrases) > 0 || len(q.Terms) == 0 {
		return nil, false
	}
	var terms []string
	for _, u := range q.Terms {
		if len(u.Tokens) != 1 || u.Prefix {
			return nil, false
		}
		t := textindex.Term(u.Tokens[0])
		if t == "" || slices.Contains(terms, t) {
			continue
		}
		terms = append(terms, t)
	}
	return terms[:min(len(terms), textindex.MaxQueryUnits)], true
}

// better orders candidates: higher score, then newer chunk.
func better(a, b recall.Candidate) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ChunkID > b.ChunkID
}
