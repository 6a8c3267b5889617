package vindex

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// The search benchmarks build a 384-dimensional index once per data set and
// report, besides ns/op:
//
//	p50-ms, p99-ms      per-query latency over the b.N queries, rescoring included
//	cpu-ms/op           CPU time per query, all cores: the work, without the
//	                    wait for a core that other load on the machine adds
//	p50-kind-ms         p50 with a kind and source prefix filter passing 11%
//	p50-date-ms         p50 with a date filter passing half the sources
//	recall@10           against exact float search, mean over 100 queries
//	recall@10-int8      the same without rescoring: what the codes alone give
//	MB-vectors          codes and scales (10⁶ bytes)
//	MB-index            MemoryBytes: everything the index holds
//
// Run: go test -run '^$' -bench 'Search(100k|1M)' -benchtime 200x ./internal/vindex/
// (a fixed count gives p99 enough samples; the 1M build takes a minute).

const (
	benchDim     = 384
	benchQueries = 100
)

func BenchmarkSearch100k(b *testing.B) { benchSearch(b, 100_000, 1) }
func BenchmarkSearch1M(b *testing.B)   { benchSearch(b, 1_000_000, 1) }

// unitsPerChunk is how many unit vectors the search layer indexes for a
// 2000-character chunk of conversation: one per paragraph group of up to
// 300 characters, 6.75 on average over the development vault's 89 chunks.
const unitsPerChunk = 7

// BenchmarkSearchChunks100k and 1M measure the index as the search layer
// uses it for an archive of that many chunks: each chunk is unitsPerChunk
// vectors, grouped, and a search returns the best chunks, so 100k chunks are
// 700k vectors. recall@10 is over chunks (groups).
func BenchmarkSearchChunks100k(b *testing.B) { benchSearch(b, 100_000, unitsPerChunk) }
func BenchmarkSearchChunks1M(b *testing.B)   { benchSearch(b, 1_000_000, unitsPerChunk) }

// benchSearch runs the benchmarks over n chunks of per vectors each.
func benchSearch(b *testing.B, n, per int) {
	b.Run("uniform", func(b *testing.B) {
		runSearch(b, n*per, "uniform", func() *dataset {
			d := uniform(benchDim, 1)
			d.per = per
			return d
		})
	})
	b.Run("clustered", func(b *testing.B) {
		// 1,000 vectors per cluster whatever the size.
		runSearch(b, n*per, "clustered", func() *dataset {
			d := clustered(benchDim, 2, n*per/1000, 0.5)
			d.per = per
			return d
		})
	})
}

// built keeps each index between runs of a benchmark (a higher b.N,
// -count), since building the 1M ones with their exact answers takes a
// minute. Both 1M indexes together hold about 1 GB.
var built = map[string]*benchIndex{}

type benchIndex struct {
	x     *Index
	d     *dataset
	qs    [][]float32
	truth *exactTop
}

func runSearch(b *testing.B, n int, name string, data func() *dataset) {
	d := data()
	key := name + "/" + strconv.Itoa(n) + "/" + strconv.Itoa(d.per)
	bi := built[key]
	if bi == nil {
		qs := make([][]float32, benchQueries)
		for i := range qs {
			qs[i] = d.query(i)
		}
		start := time.Now()
		x, truth := build(d, n, d.fetch, qs, 10)
		b.Logf("built %s in %v", key, time.Since(start).Round(time.Millisecond))
		bi = &benchIndex{x, d, qs, truth}
		built[key] = bi
	}
	x, d, qs, truth := bi.x, bi.d, bi.qs, bi.truth

	rec := func() float64 {
		var sum float64
		for i, q := range qs {
			res, err := x.Search(ctx, q, 10, nil)
			if err != nil {
				b.Fatal(err)
			}
			sum += d.recallAt(truth.best[i], res, 10)
		}
		return sum / float64(len(qs))
	}
	recall10 := rec()
	fetch := x.fetch
	x.fetch = nil
	recall8 := rec()
	x.fetch = fetch

	filtered := func(f recall.Filter) float64 {
		var lat []time.Duration
		for _, q := range qs[:20] {
			start := time.Now()
			if _, err := x.Search(ctx, q, 10, f.Allows); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		return percentile(lat, 0.5)
	}
	kindP50 := filtered(recall.Filter{Kinds: []recall.Kind{recall.KindArchive}, SourcePrefix: "vault/1"})
	dateP50 := filtered(recall.Filter{Since: "2024-07"})

	var lat []time.Duration
	cpu := cpuTime()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := x.Search(ctx, qs[i%len(qs)], 10, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	cpu = cpuTime() - cpu
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(float64(cpu)/float64(len(lat))/float64(time.Millisecond), "cpu-ms/op")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(kindP50, "p50-kind-ms")
	b.ReportMetric(dateP50, "p50-date-ms")
	b.ReportMetric(recall10, "recall@10")
	b.ReportMetric(recall8, "recall@10-int8")
	b.ReportMetric(float64(x.vectorBytes())/1e6, "MB-vectors")
	b.ReportMetric(float64(x.MemoryBytes())/1e6, "MB-index")
}

// percentile returns the p-quantile of ds in milliseconds.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, int(p*float64(len(s))))
	return float64(s[i]) / float64(time.Millisecond)
}

// BenchmarkDotDigits compares the selected kernel with the portable one on
// one block of 384-dimensional digit codes (the bytes one scan step reads),
// and the byte-query kernels this CPU has with theirs.
func BenchmarkDotDigits(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	q := make([]int16, benchDim)
	for j := range q {
		q[j] = int16(r.IntN(65535) - 32767)
	}
	const stride = benchDim / 2
	plane := make([]byte, block*stride)
	for j := range plane {
		plane[j] = byte(r.IntN(256))
	}
	out := make([]int32, block)
	kernels := []struct {
		name string
		fn   func([]int16, []byte, int, []int32)
	}{{"selected", dotDigits}, {"generic", dotDigitsGeneric}}
	for _, k := range kernels {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(len(plane)))
			for b.Loop() {
				k.fn(q, plane, stride, out)
			}
		})
	}
	// The byte-query kernels the scan uses where the CPU has one.
	q8 := make([]int8, benchDim)
	for j := range q8 {
		q8[j] = int8(r.IntN(255) - 127)
	}
	qlo, qhi := make([]int8, stride), make([]int8, stride)
	splitQuery8(qlo, qhi, q8)
	kernels8 := maps.Clone(kernels8)
	kernels8["generic"] = dotDigits8Generic
	for _, name := range slices.Sorted(maps.Keys(kernels8)) {
		b.Run("bytes-"+name, func(b *testing.B) {
			b.SetBytes(int64(len(plane)))
			for b.Loop() {
				kernels8[name](qlo, qhi, plane, stride, out)
			}
		})
	}
}

// BenchmarkAdd measures what indexing costs a vector (the start-up load
// does this for every vector of the read space): its checks, codes, sign
// bits and slots, in an index grown for them beforehand as the load grows
// it. ns/op is per vector.
//
// Run: go test -run '^$' -bench 'Add$' -cpu 1 ./internal/vindex/
func BenchmarkAdd(b *testing.B) {
	d := clustered(benchDim, 3, 100, 0.5)
	const n = 100_000
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = d.vector(i)
	}
	var x *Index
	i := n
	for b.Loop() {
		if i == n {
			b.StopTimer()
			x, i = New(benchDim, nil), 0
			x.Grow(n)
			b.StartTimer()
		}
		meta := recall.SourceMeta{ID: "vault/" + strconv.Itoa(i/10), Kind: recall.KindArchive}
		if err := x.Add(recall.IndexedChunk{ID: int64(i), VectorKey: hashOf(i), Source: meta}, vecs[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
