package search

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/vindex"
)

// A chunk's vector holds one unit vector per paragraph group of the chunk
// (embed.Units); a chunk scores as its best unit. The vector index knows one
// vector per entry, so each unit is indexed as an entry of its own: chunk
// id c, unit u becomes id c<<unitBits|u with the key "<vector key>#<u>".
// Searches map entries back to chunks and keep each chunk's best unit.
const (
	unitBits = 5
	maxUnits = 1 << unitBits // embed.Units stays below this
)

func unitID(chunk int64, u int) int64 { return chunk<<unitBits | int64(u) }

func unitKey(key string, u int) string { return key + "#" + strconv.Itoa(u) }

// splitUnitKey returns the vector key and unit number of an entry's key.
func splitUnitKey(h string) (string, int) {
	i := strings.LastIndexByte(h, '#')
	if i < 0 {
		return h, 0
	}
	u, _ := strconv.Atoi(h[i+1:])
	return h[:i], u
}

// units splits a text's vector into its unit vectors (nil for nil).
func units(vec []float32, dim int) [][]float32 {
	if vec == nil {
		return nil
	}
	n := min(len(vec)/dim, maxUnits)
	out := make([][]float32, n)
	for u := range out {
		out[u] = vec[u*dim : (u+1)*dim]
	}
	return out
}

// unitIndex adapts a vindex.Index to chunks with several unit vectors.
type unitIndex struct {
	vx  *vindex.Index
	dim int
}

func newUnitIndex(dim int, fetch func(ctx context.Context, keys []string) (map[string][]float32, error)) *unitIndex {
	// Rescoring asks for exact unit vectors: fetch each key's stored
	// vector once and slice the units out of it.
	unitFetch := func(ctx context.Context, hashes []string) (map[string][]float32, error) {
		var texts []string
		seen := map[string]bool{}
		for _, h := range hashes {
			t, _ := splitUnitKey(h)
			if !seen[t] {
				seen[t] = true
				texts = append(texts, t)
			}
		}
		stored, err := fetch(ctx, texts)
		if err != nil {
			return nil, err
		}
		out := make(map[string][]float32, len(hashes))
		for _, h := range hashes {
			t, u := splitUnitKey(h)
			if us := units(stored[t], dim); u < len(us) {
				out[h] = us[u]
			}
		}
		return out, nil
	}
	return &unitIndex{vx: vindex.NewGrouped(dim, unitFetch, textOf), dim: dim}
}

// textOf is the group of a unit entry: its text, named by the first
// recall.KeyPrefixLen hex digits of its text's hash, with which every
// vector key of the text begins (recall.VectorKey). Units are grouped by
// text, not by key, so that one passage under many headers (a text pasted
// into thirty conversations, each titled its own way, has thirty keys) is
// one hit of the vector leg, at its best copy's score, and does not crowd
// out the passages after it; the store names the other copies' sources
// (also_in).
func textOf(h string) string {
	k, _ := splitUnitKey(h)
	return k[:min(len(k), recall.KeyPrefixLen)]
}

// reserve makes room for about n more unit vectors (see loadVectors).
func (x *unitIndex) reserve(n int) { x.vx.Grow(n) }

// room is how many more unit vectors fit before the index must grow.
func (x *unitIndex) room() int { return x.vx.Room() }

// has reports whether the key already has its vectors in the index.
func (x *unitIndex) has(key string) bool { return x.vx.Has(unitKey(key, 0)) }

// hasChunk reports whether chunk id is indexed.
func (x *unitIndex) hasChunk(id int64) bool { return x.vx.HasID(unitID(id, 0)) }

// add indexes chunk c with its vector (nil when its key is indexed).
func (x *unitIndex) add(c recall.IndexedChunk, vec []float32) error {
	var res recall.WriteResult
	vecs := map[string][]float32{}
	x.expand(c, vec, &res, vecs)
	_, err := x.vx.Apply(res, vecs)
	return err
}

// expand adds chunk c's unit entries to res (and their vectors to vecs).
func (x *unitIndex) expand(c recall.IndexedChunk, vec []float32, res *recall.WriteResult, vecs map[string][]float32) {
	us := units(vec, x.dim)
	n := len(us)
	if vec == nil {
		n = x.count(c.VectorKey)
	}
	for u := 0; u < n; u++ {
		k := unitKey(c.VectorKey, u)
		res.Added = append(res.Added, recall.IndexedChunk{ID: unitID(c.ID, u), Hash: c.Hash, VectorKey: k, Source: c.Source})
		if us != nil {
			vecs[k] = us[u]
		}
	}
}

// count is how many units an indexed key has.
func (x *unitIndex) count(key string) int {
	n := 0
	for n < maxUnits && x.vx.Has(unitKey(key, n)) {
		n++
	}
	return n
}

// apply follows a committed write: vecs holds the vectors of keys the
// index may not have yet.
func (x *unitIndex) apply(res recall.WriteResult, vecs map[string][]float32) error {
	var ures recall.WriteResult
	uvecs := map[string][]float32{}
	for _, c := range res.Added {
		x.expand(c, vecs[c.VectorKey], &ures, uvecs)
	}
	for _, id := range res.Removed {
		for u := range maxUnits {
			ures.Removed = append(ures.Removed, unitID(id, u))
		}
	}
	_, err := x.vx.Apply(ures, uvecs)
	return err
}

// unitHit is one vector key found by a search, at its best unit's score,
// with the chunks holding it.
type unitHit struct {
	Key      string
	Score    float32
	ChunkIDs []int64
}

// search returns up to k keys best first, each at its best unit's score:
// the index groups units by text (textOf), so k keys of k texts come back
// whenever k texts exist.
//
// only, when not nil, further limits the search to those sources (by id);
// such a search's filter is not kept for the next.
func (x *unitIndex) search(ctx context.Context, q []float32, k int, f recall.Filter, only map[string]bool, exact bool) ([]unitHit, error) {
	search := x.vx.SearchKeyed
	if !exact {
		search = x.vx.SearchCodes
	}
	allow, key := vectorFilter(f, only)
	res, err := search(ctx, q, k, allow, key)
	if err != nil {
		return nil, err
	}
	out := make([]unitHit, len(res))
	for i, r := range res {
		t, _ := splitUnitKey(r.Key)
		ids := make([]int64, len(r.ChunkIDs))
		for j, id := range r.ChunkIDs {
			ids[j] = id >> unitBits
		}
		out[i] = unitHit{Key: t, Score: r.Score, ChunkIDs: ids}
	}
	return out, nil
}

// vectorFilter returns the test a chunk's source must pass to be a vector
// candidate of a search with filter f, further limited to the sources in
// only when it is not nil, and the key under which an index may keep what
// it allows ("" when it must not: only is the search's own).
func vectorFilter(f recall.Filter, only map[string]bool) (func(*recall.SourceMeta) bool, string) {
	allow, key := f.Matcher(), fmt.Sprintf("%#v", f)
	if only != nil {
		match := allow
		allow = func(m *recall.SourceMeta) bool { return only[m.ID] && match(m) }
		key = ""
	}
	return allow, key
}

// chunkIDs returns the ids of the chunks indexed, in no particular order.
func (x *unitIndex) chunkIDs() []int64 {
	var ids []int64
	for _, id := range x.vx.IDs() {
		if id&(maxUnits-1) == 0 {
			ids = append(ids, id>>unitBits)
		}
	}
	return ids
}

// lacking returns the keys whose vectors are not in the index.
func (x *unitIndex) lacking(keys []string) []string {
	first := make([]string, len(keys))
	for i, k := range keys {
		first[i] = unitKey(k, 0)
	}
	out := x.vx.Missing(first)
	for i, h := range out {
		out[i], _ = splitUnitKey(h)
	}
	return out
}

// texts is how many distinct vector keys have their vectors in the index.
func (x *unitIndex) texts() int {
	return x.vx.CountHashes(func(h string) bool { return strings.HasSuffix(h, "#0") })
}

// chunks is how many chunks the index holds (over units).
func (x *unitIndex) len() int { return x.vx.Len() }
