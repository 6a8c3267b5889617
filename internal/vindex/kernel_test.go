package vindex

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDotDigitsMatchesGeneric runs the selected kernel (assembly where the
// CPU has it) against the portable one for every stride shape the loops
// distinguish, with digits and query components at their extremes.
func TestDotDigitsMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, stride := range []int{16, 32, 48, 64, 80, 192, 208, 768, 1536} {
		for _, n := range []int{0, 1, 2, 5, 64} {
			bound := queryBound(2 * stride)
			q := make([]int16, 2*stride)
			for j := range q {
				q[j] = int16(r.IntN(2*bound+1) - bound)
			}
			plane := make([]byte, n*stride)
			for j := range plane {
				plane[j] = byte(r.IntN(256))
			}
			if n > 0 {
				for j := range q {
					q[j] = int16(-bound)
				}
				for j := 0; j < stride; j++ {
					plane[j] = 0xff
				}
			}
			got := make([]int32, n)
			want := make([]int32, n)
			dotDigits(q, plane, stride, got)
			dotDigitsGeneric(q, plane, stride, want)
			if !slices.Equal(got, want) {
				t.Fatalf("stride %d n %d: kernel %v, generic %v", stride, n, got, want)
			}
		}
	}
}

// TestDigitsRecombine checks that the two digit planes give back the exact
// int8 dot product: Σ q·c = 16·Σ q·high + Σ q·low − 128·Σ q.
func TestDigitsRecombine(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, dim := range []int{1, 3, 31, 32, 33, 100, 384, 1536} {
		pd := paddedDim(dim)
		codes := make([]int8, pd)
		for j := range dim {
			codes[j] = int8(r.IntN(255) - 127)
		}
		hi, lo := make([]byte, pd/2), make([]byte, pd/2)
		pack(hi, lo, codes)
		back := make([]int8, pd)
		unpack(back, hi, lo)
		if !slices.Equal(back, codes) {
			t.Fatalf("dim %d: unpack(pack(c)) = %v, want %v", dim, back, codes)
		}

		bound := queryBound(dim)
		q := make([]int16, pd)
		var sum, want int64
		for j := range dim {
			q[j] = int16(r.IntN(2*bound+1) - bound)
			sum += int64(q[j])
			want += int64(q[j]) * int64(codes[j])
		}
		var dh, dl [1]int32
		dotDigits(q, hi, pd/2, dh[:])
		dotDigits(q, lo, pd/2, dl[:])
		if got := 16*int64(dh[0]) + int64(dl[0]) - 128*sum; got != want {
			t.Fatalf("dim %d: recombined %d, int8 dot %d", dim, got, want)
		}
	}
}

// unpack is the inverse of pack.
func unpack(codes []int8, hi, lo []byte) {
	for b := 0; b < len(codes); b += 32 {
		for i := range 16 {
			h, l := hi[b/2+i], lo[b/2+i]
			codes[b+i] = int8(int(h&0x0f<<4|l&0x0f) - 128)
			codes[b+i+16] = int8(int(h&0xf0|l>>4) - 128)
		}
	}
}

// TestDotDigits8MatchesGeneric runs each byte-query kernel the CPU can run
// (AVX2, AVX-512 VNNI) against the portable one, at the extremes too, and
// checks the split query against dotDigits with the same values.
func TestDotDigits8MatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, stride := range []int{16, 64, 128, 192, 208, 512, 768} {
		for _, n := range []int{0, 1, 2, 5, 64} {
			q8 := make([]int8, 2*stride)
			q16 := make([]int16, 2*stride)
			for j := range q8 {
				q8[j] = int8(r.IntN(255) - 127)
				if n == 5 {
					q8[j] = -127
				}
				q16[j] = int16(q8[j])
			}
			qlo, qhi := make([]int8, stride), make([]int8, stride)
			splitQuery8(qlo, qhi, q8)
			plane := make([]byte, n*stride)
			for j := range plane {
				plane[j] = byte(r.IntN(256))
				if n == 5 {
					plane[j] = 0xff
				}
			}
			want := make([]int32, n)
			ref := make([]int32, n)
			dotDigits8Generic(qlo, qhi, plane, stride, want)
			dotDigitsGeneric(q16, plane, stride, ref)
			if !slices.Equal(want, ref) {
				t.Fatalf("stride %d n %d: generic %v, int16 reference %v", stride, n, want, ref)
			}
			kernels := map[string]func([]int8, []int8, []byte, int, []int32){"selected": dotDigits8}
			maps.Copy(kernels, kernels8)
			for name, kernel := range kernels {
				got := make([]int32, n)
				kernel(qlo, qhi, plane, stride, got)
				if !slices.Equal(got, want) {
					t.Fatalf("%s kernel, stride %d n %d: %v, generic %v", name, stride, n, got, want)
				}
			}
		}
	}
	t.Logf("byte-query kernels of their own: %v (scan with one: %v)", slices.Sorted(maps.Keys(kernels8)), fastDotDigits8())
}
