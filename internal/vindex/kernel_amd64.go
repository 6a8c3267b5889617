//go:build !purego

package vindex

import "golang.org/x/sys/cpu"

// dotBatchAVX2 is dotBatch with AVX2: codes are sign-extended to int16 and
// multiplied-and-paired with VPMADDWD, 64 components per loop turn.
//
//go:noescape
func dotBatchAVX2(q *int16, codes *int8, dim, n int, out *int32)

func init() {
	if cpu.X86.HasAVX2 {
		dotBatch = dotBatchAsm
	}
}

func dotBatchAsm(q []int16, codes []int8, dim int, out []int32) {
	n := len(out)
	if n == 0 || dim == 0 {
		clear(out)
		return
	}
	// Bounds are checked here once so the assembly can trust its arguments.
	_ = q[dim-1]
	_ = codes[n*dim-1]
	dotBatchAVX2(&q[0], &codes[0], dim, n, &out[0])
}
