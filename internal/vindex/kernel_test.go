package vindex

import (
	"math/rand/v2"
	"testing"
)

// TestDotBatchMatchesGeneric runs the selected kernel (assembly where the CPU
// has it) against the portable one on lengths that exercise every loop and
// tail, with values at the extremes the quantisers produce.
func TestDotBatchMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	dims := []int{1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 79, 127, 128, 129, 383, 384, 385, 769, 1536}
	for _, dim := range dims {
		for _, n := range []int{0, 1, 2, 5, 64} {
			bound := queryBound(dim)
			q := make([]int16, dim)
			for j := range q {
				q[j] = int16(r.IntN(2*bound+1) - bound)
			}
			codes := make([]int8, n*dim)
			for j := range codes {
				codes[j] = int8(r.IntN(255) - 127)
			}
			if n > 0 {
				// Extremes: every product at its largest magnitude, both signs.
				for j := 0; j < dim; j++ {
					q[j] = int16(bound)
					codes[j] = -127
				}
			}
			got := make([]int32, n)
			want := make([]int32, n)
			dotBatch(q, codes, dim, got)
			dotBatchGeneric(q, codes, dim, want)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("dim %d n %d vector %d: kernel %d, generic %d", dim, n, i, got[i], want[i])
				}
			}
			if n > 0 {
				var exact int64
				for j := 0; j < dim; j++ {
					exact += int64(q[j]) * int64(codes[j])
				}
				if int64(want[0]) != exact {
					t.Fatalf("dim %d: int32 sum %d overflowed, exact %d", dim, want[0], exact)
				}
			}
		}
	}
}
