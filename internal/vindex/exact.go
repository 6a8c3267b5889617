package vindex

import (
	"cmp"
	heaps "container/heap"
	"slices"

	"github.com/recall-mcp/recall"
)

// Exact ranks vectors given to it one at a time by their exact cosine with
// one query, keeping the k best groups (a group scores as its best vector):
// a search without an index, for one query over vectors read straight from
// the store, where building an Index would cost many times the query. It
// scores exactly as an Index's float rescoring does (the same normalisation
// and kernel), and breaks ties between groups by name as a grouped Index
// does, so it returns what a rescoring search of an Index over the same
// vectors returns. It keeps nothing of the vectors but the k groups'
// scores, names and ids. Not safe for concurrent use.
type Exact struct {
	u    []float32 // the query at unit length
	w    []float32 // scratch for a vector at unit length
	k    int
	top  exactHeap
	kept map[string]*exactGroup // the groups in top, by name
}

type exactGroup struct {
	name  string
	score float32
	ids   []int64
}

// NewExact returns an empty ranking of the k best groups for query q,
// which must have a finite non-zero length (EINVALID).
func NewExact(q []float32, k int) (*Exact, error) {
	u, ok := unit(q)
	if !ok {
		return nil, recall.Errorf(recall.EINVALID, "query vector is zero or not finite")
	}
	return &Exact{u: u, w: make([]float32, len(q)), k: max(k, 0), kept: make(map[string]*exactGroup, k)}, nil
}

// Score returns the cosine of v with the query; ok is false when v is zero,
// not finite or of another dimension than the query, and so scores nothing.
func (x *Exact) Score(v []float32) (s float32, ok bool) {
	if len(v) != len(x.u) {
		return 0, false
	}
	w, ok := unitInto(x.w, v)
	if !ok {
		return 0, false
	}
	return dot(x.u, w), true
}

// Add offers id, a member of group at the group's score s (its best
// vector's: every Add of one group must give the same score). The group is
// kept while it is among the k best so far, with the ids added to it
// meanwhile; a group that falls out is never taken back, as its score
// stays below those kept.
func (x *Exact) Add(group string, s float32, id int64) {
	if g := x.kept[group]; g != nil {
		g.ids = append(g.ids, id)
		return
	}
	g := &exactGroup{name: group, score: s, ids: []int64{id}}
	if len(x.top) < x.k {
		heaps.Push(&x.top, g)
		x.kept[group] = g
		return
	}
	if x.k == 0 || !better(g, x.top[0]) {
		return
	}
	delete(x.kept, x.top[0].name)
	x.top[0] = g
	x.kept[group] = g
	heaps.Fix(&x.top, 0)
}

// Results returns the groups kept, best first, each named by Key with its
// ids ascending and duplicates dropped.
func (x *Exact) Results() []Result {
	groups := slices.Clone(x.top)
	slices.SortFunc(groups, func(a, b *exactGroup) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	out := make([]Result, len(groups))
	for i, g := range groups {
		ids := slices.Clone(g.ids)
		slices.Sort(ids)
		out[i] = Result{Key: g.name, Score: g.score, ChunkIDs: slices.Compact(ids)}
	}
	return out
}

// better orders groups as a search's results: by score, then by name.
func better(a, b *exactGroup) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return cmp.Less(a.name, b.name)
}

// exactHeap is a min-heap of groups: its root is the weakest kept.
type exactHeap []*exactGroup

func (h exactHeap) Len() int           { return len(h) }
func (h exactHeap) Less(i, j int) bool { return better(h[j], h[i]) }
func (h exactHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *exactHeap) Push(x any)        { *h = append(*h, x.(*exactGroup)) }
func (h *exactHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	*h = old[:len(old)-1]
	return g
}
