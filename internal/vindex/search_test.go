package vindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recall-mcp/recall"
)

// bruteForce ranks the unit vectors units (vector i has hash hashOf(i)) by
// exact float cosine with q.
func bruteForce(units [][]float32, q []float32) []scored {
	u, _ := unit(q)
	all := make([]scored, len(units))
	for i, w := range units {
		all[i] = scored{i, dot(u, w)}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.score > b.score {
			return -1
		}
		if a.score < b.score {
			return 1
		}
		return a.i - b.i
	})
	return all
}

// TestSearchMatchesBruteForce compares the index with exact float search on
// small sets, over dimensions that exercise every kernel tail and sizes that
// take the parallel path, with and without rescoring.
func TestSearchMatchesBruteForce(t *testing.T) {
	tests := []struct {
		dim, n  int
		rescore bool
		// gap is the score difference between neighbours above which their
		// order must match exact search: exact with rescoring, the int8
		// error bound without.
		gap float32
	}{
		{dim: 3, n: 50, rescore: true, gap: 1e-6},
		{dim: 37, n: 1000, rescore: true, gap: 1e-6},
		{dim: 384, n: 3000, rescore: true, gap: 1e-6},
		{dim: 20, n: 2 * minPerWorker, rescore: true, gap: 1e-6},
		{dim: 37, n: 1000, rescore: false, gap: 0.02},
		{dim: 384, n: 3000, rescore: false, gap: 0.01},
	}
	for _, tt := range tests {
		name := "dim" + strconv.Itoa(tt.dim) + "/n" + strconv.Itoa(tt.n)
		if !tt.rescore {
			name += "/int8"
		}
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tt.dim), uint64(tt.n)))
			vecs := floats{}
			units := make([][]float32, tt.n)
			var fetch FetchFunc
			if tt.rescore {
				fetch = vecs.fetch
			}
			x := New(tt.dim, fetch)
			for i := range tt.n {
				v := gaussian(r, tt.dim)
				for j := range v {
					v[j] *= 3 // unnormalised input: the index normalises
				}
				vecs[hashOf(i)] = v
				units[i], _ = unit(v)
				must(t, x.Add(chunk(int64(i), hashOf(i), "s"), v))
			}
			const k = 10
			for range 20 {
				q := gaussian(r, tt.dim)
				want := bruteForce(units, q)
				got, err := x.Search(ctx, q, k, nil)
				must(t, err)
				if len(got) != k {
					t.Fatalf("%d results, want %d", len(got), k)
				}
				for i, g := range got {
					w := want[i]
					if tt.rescore && math.Abs(float64(g.Score-w.score)) > 1e-5 {
						t.Fatalf("rank %d: score %v, exact %v", i, g.Score, w.score)
					}
					separated := (i == 0 || want[i-1].score-w.score > tt.gap) && want[i+1].score < w.score-tt.gap
					if separated && g.Key != hashOf(w.i) {
						t.Fatalf("rank %d: %s (%.4f), exact search has %s (%.4f)", i, g.Key, g.Score, hashOf(w.i), w.score)
					}
				}
			}
		})
	}
}

// TestFilterBeforeCut: a filter passing 3 entries of 10,000 returns those 3,
// however poorly they score against entries it excludes.
func TestFilterBeforeCut(t *testing.T) {
	const dim, n = 32, 10000
	r := rand.New(rand.NewPCG(7, 7))
	x := New(dim, nil)
	q := gaussian(r, dim)
	for i := range n {
		v := gaussian(r, dim)
		src := recall.SourceMeta{ID: "archive/" + strconv.Itoa(i%100), Kind: recall.KindArchive, Date: "2024-05-01"}
		if i == 17 || i == 4242 || i == 9999 {
			// The allowed ones point away from the query.
			for j := range v {
				v[j] = -q[j] + 0.1*v[j]
			}
			src = recall.SourceMeta{ID: "mem/" + strconv.Itoa(i), Kind: recall.KindMemory, Owner: "ann", Date: "2023-01-02"}
		}
		must(t, x.Add(recall.IndexedChunk{ID: int64(i), VectorKey: hashOf(i), Source: src}, v))
	}
	filters := []recall.Filter{
		{Kinds: []recall.Kind{recall.KindMemory}},
		{SourcePrefix: "mem/"},
		{Until: "2023"},
		{Kinds: []recall.Kind{recall.KindMemory, recall.KindDiary}, OwnerScoped: true, Owner: "ann"},
	}
	for _, f := range filters {
		res, err := x.Search(ctx, q, 10, f.Allows)
		must(t, err)
		var ids []int64
		for _, re := range res {
			ids = append(ids, re.ChunkIDs...)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []int64{17, 4242, 9999}) {
			t.Fatalf("filter %+v: chunks %v, want [17 4242 9999]", f, ids)
		}
	}
	res, err := x.Search(ctx, q, 10, func(*recall.SourceMeta) bool { return false })
	if err != nil || len(res) != 0 {
		t.Fatalf("filter allowing nothing: %+v, %v", res, err)
	}
}

// TestFilterPerChunk: a text shared by an allowed and a refused chunk is
// found, listing only the allowed chunk.
func TestFilterPerChunk(t *testing.T) {
	x := New(2, nil)
	must(t, x.Add(recall.IndexedChunk{ID: 1, VectorKey: "a", Source: recall.SourceMeta{ID: "mine", Kind: recall.KindMemory, Owner: "ann"}}, []float32{1, 0}))
	must(t, x.Add(recall.IndexedChunk{ID: 2, VectorKey: "a", Source: recall.SourceMeta{ID: "theirs", Kind: recall.KindMemory, Owner: "bob"}}, nil))
	f := recall.Filter{OwnerScoped: true, Owner: "bob"}
	res, err := x.Search(ctx, []float32{1, 0}, 5, f.Allows)
	must(t, err)
	if len(res) != 1 || !slices.Equal(res[0].ChunkIDs, []int64{2}) {
		t.Fatalf("results %+v, want text a with chunk 2 only", res)
	}
}

func TestKBeyondSize(t *testing.T) {
	x := New(4, nil)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		must(t, x.Add(chunk(int64(i), hashOf(i), "s"), gaussian(r, 4)))
	}
	for _, k := range []int{0, -1, 5, 6, 1000} {
		res, err := x.Search(ctx, gaussian(r, 4), k, nil)
		must(t, err)
		if want := max(0, min(k, 5)); len(res) != want {
			t.Fatalf("k %d: %d results, want %d", k, len(res), want)
		}
		for i := 1; i < len(res); i++ {
			if res[i].Score > res[i-1].Score {
				t.Fatalf("k %d: results not best first: %+v", k, res)
			}
		}
	}
	empty := New(4, nil)
	if res, err := empty.Search(ctx, []float32{1, 0, 0, 0}, 3, all); err != nil || len(res) != 0 {
		t.Fatalf("empty index: %+v, %v", res, err)
	}
}

// TestConcurrentSearchAndRemove runs searches while chunks are removed and
// moved, under the race detector in CI. A search that starts after Remove
// returned must not see the removed chunk: the index's own lock is the whole
// contract, no caller lock is needed for it.
func TestConcurrentSearchAndRemove(t *testing.T) {
	const dim, n = 16, minPerWorker + 4000 // searches scan in parallel, then on one core
	d := uniform(dim, 11)
	x := New(dim, d.fetch)
	for i := range n {
		must(t, x.Add(chunk(int64(i), hashOf(i), "s"+strconv.Itoa(i%50)), d.vector(i)))
	}
	var removed sync.Map // chunk id -> true once Remove returned
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		r := rand.New(rand.NewPCG(1, 1))
		for _, i := range r.Perm(n)[:n/4] {
			if i%3 != 0 {
				x.Remove(int64(i))
				removed.Store(int64(i), true)
				continue
			}
			// The text moves to a new chunk id in one write.
			w := recall.WriteResult{Removed: []int64{int64(i)}, Added: []recall.IndexedChunk{chunk(int64(n+i), hashOf(i), "moved")}}
			if _, err := x.Apply(w, nil); err != nil {
				t.Error(err)
				return
			}
			removed.Store(int64(i), true)
		}
	})
	for w := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(2, uint64(w)))
			for q := 0; !done.Load(); q++ {
				var before []int64
				removed.Range(func(k, _ any) bool {
					before = append(before, k.(int64))
					return true
				})
				var allow func(*recall.SourceMeta) bool
				if q%2 == 1 {
					allow = func(m *recall.SourceMeta) bool { return m.ID != "s7" }
				}
				res, err := x.Search(ctx, gaussian(r, dim), 20, allow)
				if err != nil {
					t.Error(err)
					return
				}
				gone := make(map[int64]bool, len(before))
				for _, id := range before {
					gone[id] = true
				}
				for _, re := range res {
					for _, id := range re.ChunkIDs {
						if gone[id] {
							t.Errorf("chunk %d returned after its removal", id)
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	checkInvariants(t, x)
}

// TestRecallClustered measures recall@10 against exact float search on
// clustered 384-dimensional vectors, the hard case for int8 codes. The
// benchmarks measure it at 100k and 1M.
func TestRecallClustered(t *testing.T) {
	n := 20000
	if testing.Short() || raceEnabled {
		n = 5000
	}
	for _, tc := range []struct {
		name      string
		per, seed int
		signsMin  int
	}{
		{"scan", 1, 1, signsMin},
		// An index large enough for the sign pass (signs.go), grouped as
		// the search layer's units of a chunk.
		{"signs", 7, 11, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(m int) { signsMin = m }(signsMin)
			signsMin = tc.signsMin
			d := clustered(384, uint64(tc.seed), n/1000, 0.5)
			d.per = tc.per
			var qs [][]float32
			for i := range 50 {
				qs = append(qs, d.query(i))
			}
			x, truth := build(d, n, d.fetch, qs, 10)
			var sum float64
			for i, q := range qs {
				res, err := x.Search(ctx, q, 10, nil)
				must(t, err)
				sum += d.recallAt(truth.best[i], res, 10)
			}
			if got := sum / float64(len(qs)); got < 0.99 {
				t.Fatalf("recall@10 %.3f, want at least 0.99", got)
			}
		})
	}
}

// TestGroupedSearch: a grouped index returns the k best groups, each at its
// best vector's exact score, even when one group's vectors fill more than
// the scan's first pass (here 2,000 near copies of the query in group
// "crowd" against a first pass of 512).
func TestGroupedSearch(t *testing.T) {
	const dim, k = 48, 10
	r := rand.New(rand.NewPCG(7, 11))
	group := func(h string) string { g, _, _ := strings.Cut(h, "#"); return g }
	for _, rescore := range []bool{true, false} {
		t.Run("rescore="+strconv.FormatBool(rescore), func(t *testing.T) {
			vecs := floats{}
			var fetch FetchFunc
			if rescore {
				fetch = vecs.fetch
			}
			x := NewGrouped(dim, fetch, group)
			q := gaussian(r, dim)
			type entry struct {
				hash string
				u    []float32
			}
			var all []entry
			add := func(g string, v []float32) {
				h := g + "#" + strconv.Itoa(len(all))
				vecs[h] = v
				u, _ := unit(v)
				all = append(all, entry{h, u})
				must(t, x.Add(chunk(int64(len(all)), h, "s"), v))
			}
			for range 2000 {
				v := slices.Clone(q)
				for j := range v {
					v[j] += 0.05 * float32(r.NormFloat64())
				}
				add("crowd", v)
			}
			for g := range 300 {
				for range 1 + r.IntN(8) {
					add("g"+strconv.Itoa(g), gaussian(r, dim))
				}
			}
			// Exact answer: each group's best cosine, best groups first.
			u, _ := unit(q)
			best := map[string]float32{}
			for _, e := range all {
				g := group(e.hash)
				if s, ok := best[g]; !ok || dot(u, e.u) > s {
					best[g] = dot(u, e.u)
				}
			}
			var groups []string
			for g := range best {
				groups = append(groups, g)
			}
			slices.SortFunc(groups, func(a, b string) int {
				if best[a] > best[b] {
					return -1
				}
				if best[a] < best[b] {
					return 1
				}
				return strings.Compare(a, b)
			})

			got, err := x.Search(ctx, q, k, nil)
			must(t, err)
			if len(got) != k {
				t.Fatalf("%d results, want %d", len(got), k)
			}
			seen := map[string]bool{}
			gap := float32(0.01) // the int8 error bound without rescoring
			if rescore {
				gap = 1e-6
			}
			for i, res := range got {
				g := group(res.Key)
				if seen[g] {
					t.Fatalf("group %s returned twice", g)
				}
				seen[g] = true
				w := groups[i]
				if rescore && math.Abs(float64(res.Score-best[w])) > 1e-5 {
					t.Fatalf("rank %d: score %v, exact %v", i, res.Score, best[w])
				}
				separated := (i == 0 || best[groups[i-1]]-best[w] > gap) && best[groups[i+1]] < best[w]-gap
				if separated && g != w {
					t.Fatalf("rank %d: group %s (%.4f), exact search has %s (%.4f)", i, g, res.Score, w, best[w])
				}
			}
			if group(got[0].Key) != "crowd" {
				t.Fatalf("best group %s, want crowd", group(got[0].Key))
			}
		})
	}
}
