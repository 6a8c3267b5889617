package vindex

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"

	"github.com/recall-mcp/recall"
)

// dataset generates vectors deterministically by number, so a test or
// benchmark can regenerate any vector instead of keeping a float copy of
// them all (1.5 GB at a million): the "store" that rescoring fetches from.
type dataset struct {
	dim     int
	seed    uint64
	centres [][]float32 // nil: uniform random directions
	sigma   float64     // noise around a centre, as a share of the centre's length
	// per is how many consecutive vectors make one group (a chunk's unit
	// vectors), all drawn around one centre, as a chunk's paragraphs share
	// its conversation's topic; 0 or 1: vectors are not grouped.
	per int
}

// uniform spreads vectors evenly over the sphere: the easy case.
func uniform(dim int, seed uint64) *dataset {
	return &dataset{dim: dim, seed: seed}
}

// clustered draws from a Gaussian mixture of unit centres with noise sigma.
// Real embeddings cluster by topic, which packs many near-equal scores
// around the k-th best: the hard case for quantised scoring. sigma 0.5 puts
// a vector at cosine about 0.9 to its centre.
func clustered(dim int, seed uint64, centres int, sigma float64) *dataset {
	d := &dataset{dim: dim, seed: seed, sigma: sigma}
	r := rand.New(rand.NewPCG(seed, math.MaxUint64))
	d.centres = make([][]float32, centres)
	for i := range d.centres {
		d.centres[i] = gaussian(r, dim)
		normalise(d.centres[i])
	}
	return d
}

// vector returns vector i (queries use negative i, a stream of their own).
func (d *dataset) vector(i int) []float32 {
	r := rand.New(rand.NewPCG(d.seed, uint64(i)))
	if d.centres == nil {
		v := gaussian(r, d.dim)
		normalise(v)
		return v
	}
	c := d.centres[r.IntN(len(d.centres))]
	if d.per > 1 && i >= 0 {
		g := rand.New(rand.NewPCG(d.seed, math.MaxUint64-uint64(i/d.per)))
		c = d.centres[g.IntN(len(d.centres))]
	}
	v := make([]float32, d.dim)
	f := d.sigma / math.Sqrt(float64(d.dim))
	for j := range v {
		v[j] = c[j] + float32(f*r.NormFloat64())
	}
	normalise(v)
	return v
}

func (d *dataset) query(i int) []float32 { return d.vector(-1 - i) }

// hashOf names vector i with a string as long as a real text hash (64 hex
// digits), so that the index's memory is measured as it would be.
func hashOf(i int) string { return fmt.Sprintf("%064x", i) }

func numberOf(hash string) int {
	n, err := strconv.ParseInt(hash, 16, 64)
	if err != nil {
		panic(err)
	}
	return int(n)
}

// fetch is the FetchFunc of an index over the dataset.
func (d *dataset) fetch(_ context.Context, hashes []string) (map[string][]float32, error) {
	m := make(map[string][]float32, len(hashes))
	for _, h := range hashes {
		m[h] = d.vector(numberOf(h))
	}
	return m, nil
}

func gaussian(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	return v
}

func normalise(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	f := float32(1 / math.Sqrt(s))
	for j := range v {
		v[j] *= f
	}
}

// scored is a vector number with its exact float score.
type scored struct {
	i     int
	score float32
}

// exactTop keeps the k best exact scores of each query while vectors stream
// past, so ground truth needs no float copy of the data.
type exactTop struct {
	k    int
	qs   [][]float32
	best [][]scored
}

func newExactTop(qs [][]float32, k int) *exactTop {
	return &exactTop{k: k, qs: qs, best: make([][]scored, len(qs))}
}

func (e *exactTop) see(i int, v []float32) {
	for qi, q := range e.qs {
		s := dot(q, v)
		b := e.best[qi]
		if len(b) == e.k && s <= b[len(b)-1].score {
			continue
		}
		at, _ := slices.BinarySearchFunc(b, s, func(x scored, s float32) int {
			if x.score > s {
				return -1
			}
			return 1
		})
		b = slices.Insert(b, at, scored{i, s})
		if len(b) > e.k {
			b = b[:e.k]
		}
		e.best[qi] = b
	}
}

func (e *exactTop) merge(o *exactTop) {
	for qi := range e.best {
		for _, s := range o.best[qi] {
			e.see1(qi, s)
		}
	}
}

func (e *exactTop) see1(qi int, s scored) {
	b := append(e.best[qi], s)
	slices.SortFunc(b, func(x, y scored) int {
		if x.score > y.score {
			return -1
		}
		if x.score < y.score {
			return 1
		}
		return 0
	})
	e.best[qi] = b[:min(len(b), e.k)]
}

// build indexes vectors [0, n) of d, one chunk per vector and ten chunks per
// source dated over the twelve months of 2024, while computing the exact top
// k of the queries, on all cores. When d groups its vectors (d.per > 1) the
// index is grouped as the search layer's is, ten groups to a source, and
// the exact top k vectors are kept for k·per (see topGroups).
func build(d *dataset, n int, fetch FetchFunc, queries [][]float32, k int) (*Index, *exactTop) {
	per := max(d.per, 1)
	var x *Index
	if per > 1 {
		x = NewGrouped(d.dim, fetch, d.groupOf)
		k *= per
	} else {
		x = New(d.dim, fetch)
	}
	x.Grow(n)
	const batch = 4096
	workers := 2
	truth := make([]*exactTop, workers)
	var wg sync.WaitGroup
	for w := range workers {
		truth[w] = newExactTop(queries, k)
		wg.Go(func() {
			vecs := make([][]float32, 0, batch)
			for lo := w * batch; lo < n; lo += workers * batch {
				hi := min(lo+batch, n)
				vecs = vecs[:0]
				for i := lo; i < hi; i++ {
					v := d.vector(i)
					truth[w].see(i, v)
					vecs = append(vecs, v)
				}
				for j, v := range vecs {
					i := lo + j
					meta := recall.SourceMeta{
						ID:   "vault/" + strconv.Itoa(i/per/10),
						Kind: recall.KindArchive,
						Date: fmt.Sprintf("2024-%02d", i/per/10%12+1),
					}
					if err := x.Add(recall.IndexedChunk{ID: int64(i), VectorKey: hashOf(i), Source: meta}, v); err != nil {
						panic(err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, t := range truth[1:] {
		truth[0].merge(t)
	}
	return x, truth[0]
}

// groupOf names the group of a vector of d by its hash.
func (d *dataset) groupOf(hash string) string {
	return strconv.Itoa(numberOf(hash) / max(d.per, 1))
}

// topGroups turns the exact top k·per vectors of a query into its exact
// top k groups, each named by its best vector: a group holds at most per
// vectors, so k·per vectors hold the k best groups' best vectors.
func (d *dataset) topGroups(best []scored, k int) []scored {
	seen := map[string]bool{}
	var out []scored
	for _, s := range best {
		g := d.groupOf(hashOf(s.i))
		if !seen[g] && len(out) < k {
			seen[g] = true
			out = append(out, s)
		}
	}
	return out
}

// recallAt returns the share of the exact top k (vectors, or groups when d
// groups its vectors) that the results hold; truth is what build kept.
func (d *dataset) recallAt(truth []scored, got []Result, k int) float64 {
	if max(d.per, 1) == 1 {
		return recallAt(truth[:min(k, len(truth))], got)
	}
	want := map[string]bool{}
	for _, s := range d.topGroups(truth, k) {
		want[d.groupOf(hashOf(s.i))] = true
	}
	hit := 0
	for _, r := range got {
		if want[d.groupOf(r.Key)] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

// recallAt returns the share of the exact top k that the results hold.
func recallAt(truth []scored, got []Result) float64 {
	want := make(map[string]bool, len(truth))
	for _, s := range truth {
		want[hashOf(s.i)] = true
	}
	hit := 0
	for _, r := range got {
		if want[r.Key] {
			hit++
		}
	}
	return float64(hit) / float64(len(truth))
}
