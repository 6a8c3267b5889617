//go:build !purego

package vindex

import "golang.org/x/sys/cpu"

// dotDigitsAVX2 is dotDigits with AVX2: 16 bytes of digits are widened to
// 16-bit lanes, split into low and high digits by mask and shift, and
// multiplied-and-paired with the query by VPMADDWD; 64 dimensions a turn.
//
//go:noescape
func dotDigitsAVX2(q *int16, plane *byte, stride, n int, out *int32)

// dotDigitsVNNI is dotDigits8 with AVX-512 VNNI: 64 bytes of digits a
// turn, split by mask and shift, multiplied with the query's signed bytes
// and summed by VPDPBUSD; 128 dimensions a turn.
//
//go:noescape
func dotDigitsVNNI(qlo, qhi *int8, plane *byte, stride, n int, out *int32)

// dotDigits8AVX2 is dotDigits8 with AVX2 alone: VPMADDUBSW multiplies
// the digits with the query's signed bytes into 16-bit pairs, VPMADDWD
// widens their sums; 128 dimensions a turn, in about two thirds of the
// instructions dotDigitsAVX2 takes for them with a 16-bit query.
//
//go:noescape
func dotDigits8AVX2(qlo, qhi *int8, plane *byte, stride, n int, out *int32)

// hamming6POPCNT is hamming for rows of six words (384 dimensions), the
// query's words held in registers.
//
//go:noescape
func hamming6POPCNT(signs, qs *uint64, n int, hs *uint16, hist *int)

// fwhtWideAVX2 is fwhtWide with AVX2: eight butterflies an instruction
// pair.
//
//go:noescape
func fwhtWideAVX2(buf *int32, n int)

// flipAVX2 is flip with AVX2, eight values an instruction; n is a
// multiple of 8.
//
//go:noescape
func flipAVX2(buf, flip *int32, n int, shift uint64)

// positiveAVX2 is positive with AVX2: eight comparisons and a mask move.
//
//go:noescape
func positiveAVX2(buf *int32, words int, dst *uint64)

func init() {
	if cpu.X86.HasPOPCNT {
		hamming = hammingAsm
	}
	if cpu.X86.HasAVX2 {
		fwhtWide = func(buf []int32) { fwhtWideAVX2(&buf[0], len(buf)) }
		flip = func(buf, f []int32, shift uint) {
			_ = f[len(buf)-1]
			flipAVX2(&buf[0], &f[0], len(buf), uint64(shift))
		}
		positive = func(buf []int32, dst []uint64) {
			_ = buf[64*len(dst)-1]
			positiveAVX2(&buf[0], len(dst), &dst[0])
		}
		dotDigits = dotDigitsAsm
		kernels8["avx2"] = asm8(dotDigits8AVX2)
		dotDigits8 = kernels8["avx2"]
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI {
		kernels8["vnni"] = asm8(dotDigitsVNNI)
		dotDigits8 = kernels8["vnni"]
	}
}

// asm8 wraps a byte-query kernel: it checks the bounds once so the
// assembly can trust its arguments, and leaves strides it does not take
// (not a multiple of 64) to the portable kernel.
func asm8(kernel func(qlo, qhi *int8, plane *byte, stride, n int, out *int32)) func([]int8, []int8, []byte, int, []int32) {
	return func(qlo, qhi []int8, plane []byte, stride int, out []int32) {
		n := len(out)
		if n == 0 {
			return
		}
		if stride%64 != 0 {
			dotDigits8Generic(qlo, qhi, plane, stride, out)
			return
		}
		_ = qlo[stride-1]
		_ = qhi[stride-1]
		_ = plane[n*stride-1]
		kernel(&qlo[0], &qhi[0], &plane[0], stride, n, &out[0])
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

// hammingAsm checks the bounds hamming6POPCNT trusts, and leaves rows of
// other lengths to the portable loop.
func hammingAsm(signs, qs []uint64, hs []uint16, hist []int) {
	n := len(hs)
	if len(qs) != 6 || n == 0 {
		hammingGeneric(signs, qs, hs, hist)
		return
	}
	_ = signs[6*n-1]
	_ = hist[6*64]
	hamming6POPCNT(&signs[0], &qs[0], n, &hs[0], &hist[0])
}
