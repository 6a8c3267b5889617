//go:build !purego

package vindex

import "golang.org/x/sys/cpu"

// dotDigitsAVX2 is dotDigits with AVX2: 16 bytes of digits are widened to
// 16-bit lanes, split into low and high digits by mask and shift, and
// multiplied-and-paired with the query by VPMADDWD; 64 dimensions a turn.
//
//go:noescape
func dotDigitsAVX2(q *int16, plane *byte, stride, n int, out *int32)

func init() {
	if cpu.X86.HasAVX2 {
		dotDigits = dotDigitsAsm
	}
}

func dotDigitsAsm(q []int16, plane []byte, stride int, out []int32) {
	n := len(out)
	if n == 0 {
		return
	}
	if stride%16 != 0 {
		panic("vindex: stride not a multiple of 16")
	}
	// Bounds are checked here once so the assembly can trust its arguments.
	_ = q[2*stride-1]
	_ = plane[n*stride-1]
	dotDigitsAVX2(&q[0], &plane[0], stride, n, &out[0])
}
