//go:build !purego

package kernel

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMicroKernel runs each micro-kernel on one tile whose operands stay
// in L1: the ceiling the packed MatMulT can approach.
func BenchmarkMicroKernel(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, k := range []struct {
		name string
		ok   bool
		g    gemmKernel
	}{{"avx2", hasAVX2, gemmAVX2}, {"avx512", hasAVX512, gemmAVX512}} {
		if !k.ok {
			continue
		}
		g := k.g
		a, bp, c := randSlice(r, g.mr*g.kc), randSlice(r, g.kc*g.nr), make([]float32, g.mr*g.nr)
		b.Run(k.name, func(b *testing.B) {
			cpu0 := processCPU()
			for b.Loop() {
				g.fn(g.kc, &a[0], g.kc, &bp[0], &c[0], g.nr, nil, 1)
			}
			flop := 2 * float64(g.mr*g.nr*g.kc) * float64(b.N)
			b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(flop/cpu.Seconds()/1e9, "GFLOP/cpu-s")
			}
		})
	}
}
