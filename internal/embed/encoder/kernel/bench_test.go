package kernel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BERT-small shapes: m is the number of tokens in a batch (32 chunks of up to
// 256 tokens), k×n the projections (QKV and output 384×384, FFN 384↔1536),
// and one attention head's scores (seq×32 by seq×32) and context.
var matMulShapes = []struct {
	name    string
	m, k, n int
}{
	{"qkv_8192x384x1152", 8192, 384, 1152},
	{"attnout_8192x384x384", 8192, 384, 384},
	{"ffn1_8192x384x1536", 8192, 384, 1536},
	{"ffn2_8192x1536x384", 8192, 1536, 384},
	{"scores_256x32x256", 256, 32, 256},
	{"context_256x256x32", 256, 256, 32},
	{"query_16x384x1536", 16, 384, 1536},
}

func BenchmarkMatMulT(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range matMulShapes {
		a, w := randSlice(r, s.m*s.k), randSlice(r, s.n*s.k)
		bias, dst := randSlice(r, s.n), make([]float32, s.m*s.n)
		for _, impl := range impls() {
			b.Run(fmt.Sprintf("%s/%s", s.name, impl.name), func(b *testing.B) {
				defer impl.use()()
				cpu0 := processCPU()
				for b.Loop() {
					MatMulT(dst, a, w, bias, s.m, s.k, s.n)
				}
				flop := 2 * float64(s.m*s.k*s.n) * float64(b.N)
				b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if cpu := processCPU() - cpu0; cpu > 0 {
					b.ReportMetric(flop/cpu.Seconds()/1e9, "GFLOP/cpu-s")
				}
			})
		}
	}
}

// The element-wise kernels on one layer's worth of a 32×256-token batch:
// GELU over the FFN activations (8192×1536), softmax over one head's
// attention scores (256 rows of 256), LayerNorm over the hidden states
// (8192×384).
func BenchmarkGELU(b *testing.B) {
	x := randSlice(rand.New(rand.NewPCG(2, 2)), 8192*1536)
	for _, impl := range impls() {
		b.Run(impl.name, func(b *testing.B) {
			defer impl.use()()
			for b.Loop() {
				GELU(x)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}

func BenchmarkSoftmaxRows(b *testing.B) {
	x := randSlice(rand.New(rand.NewPCG(3, 3)), 256*256)
	for _, impl := range impls() {
		b.Run(impl.name, func(b *testing.B) {
			defer impl.use()()
			for b.Loop() {
				SoftmaxRows(x, 256, 256)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}

func BenchmarkLayerNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	x, g, bt := randSlice(r, 8192*384), randSlice(r, 384), randSlice(r, 384)
	for _, impl := range impls() {
		b.Run(impl.name, func(b *testing.B) {
			defer impl.use()()
			for b.Loop() {
				LayerNorm(x, g, bt, 8192, 384, 1e-12)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/elem")
		})
	}
}

// BenchmarkAttentionHead runs one head's two products on a 256-token window
// the way the strided API allows: queries and keys read in place from fused
// 1152-wide query/key/value rows, values multiplied without a transpose,
// output written into a 384-wide row.
func BenchmarkAttentionHead(b *testing.B) {
	const n, d, h = 256, 32, 384
	r := rand.New(rand.NewPCG(5, 5))
	qkv, scores, ctx := randSlice(r, n*3*h), make([]float32, n*n), make([]float32, n*h)
	for _, impl := range impls() {
		b.Run(impl.name, func(b *testing.B) {
			defer impl.use()()
			cpu0 := processCPU()
			for b.Loop() {
				MatMulTStrided(scores, qkv, qkv[h:], nil, n, d, n, 3*h, 3*h, n)
				MatMulStrided(ctx, scores, qkv[2*h:], nil, n, n, d, n, 3*h, h)
			}
			flop := 4 * float64(n*n*d) * float64(b.N)
			b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(flop/cpu.Seconds()/1e9, "GFLOP/cpu-s")
			}
		})
	}
}
