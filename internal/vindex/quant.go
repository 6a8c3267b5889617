package vindex

import (
	"math"

	"github.com/recall-mcp/recall/internal/embed/encoder/kernel"
)

// Vectors are stored as int8 codes with one float32 scale per vector: code ×
// scale approximates the unit-length vector's component. A per-vector scale
// needs no statistics of the whole collection, so vectors can be added one
// at a time from the first. It also ranks as well as per-dimension scales
// fitted to the data (BenchmarkQuantisation, 100k 384-dimensional vectors,
// recall@10 of the codes alone: 0.984 against 0.986 on uniform data, 0.960
// against 0.944 on clustered data), and rescoring with exact floats repairs
// what either misses.

// Each int8 code c is stored as the two hexadecimal digits of c+128, in
// two planes: high digits in one slab, low digits in another. The scan
// reads the high plane alone, so each query reads half a byte per dimension
// (memory bandwidth is what bounds a scan of a large index), ranks by
// 16·high + 7.5, and the low plane then gives the exact int8 score of the
// few hundred best. A vector's codes are padded to a multiple of 32 so the
// kernel needs no tail; padded dimensions meet zero query components.
//
// Within each block of 32 dimensions, byte i of a plane holds the digit of
// dimension i in its low four bits and that of dimension i+16 in its high
// four, so one 16-byte load widened to 16-bit lanes and split by shift and
// mask lines up with the query's components in their natural order.

// paddedDim is dim rounded up to a whole number of 32-dimension blocks.
func paddedDim(dim int) int { return (dim + 31) / 32 * 32 }

// queryBound is the largest query code magnitude for which a dot product
// with dim int8 codes cannot overflow int32: dim × 127 × bound < 2³¹. Queries
// keep up to 15 bits, so the scan's error is the stored codes' alone.
func queryBound(dim int) int {
	b := (math.MaxInt32 / 127) / max(dim, 1)
	return min(b, math.MaxInt16)
}

// unit returns a unit-length copy of v, or ok false when v is zero or holds
// NaN or Inf, which no cosine can be computed for.
func unit(v []float32) (u []float32, ok bool) {
	return unitInto(make([]float32, len(v)), v)
}

// unitInto is unit writing into dst (at least len(v) long), so that a
// caller normalising many vectors in turn allocates once.
func unitInto(dst, v []float32) (u []float32, ok bool) {
	inv, ok := invNorm(v)
	if !ok {
		return nil, false
	}
	u = dst[:len(v)]
	for i, x := range v {
		u[i] = float32(float64(x) * inv)
	}
	return u, true
}

// invNorm returns 1/|v|, or ok false when v is zero or not finite. The
// sum of squares is the float32 kernel's (a tenth of a large index's load
// went to summing it in float64); only when that overflows or leaves the
// normal range (losing precision) is it summed again in float64, which
// holds any finite float32 vector's.
func invNorm(v []float32) (inv float64, ok bool) {
	ss := float64(kernel.Dot(v, v))
	if ss < 0x1p-126 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		ss = 0
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
			return 0, false
		}
	}
	return 1 / math.Sqrt(ss), true
}

// encode stores the codes of v/|v| (inv is 1/|v|, from invNorm) as its
// high and low digit planes (paddedDim(len(v))/2 bytes each), using codes
// (paddedDim(len(v)) of them) as scratch, and returns the code scale. The
// codes of a vector are those of any multiple of it, so v is not
// normalised first; only its scale is, in float64, where a tiny vector's
// own scale could leave float32's range.
func encode(hi, lo []byte, v []float32, inv float64, codes []int8) float32 {
	clear(codes[len(v):])
	m := maxAbs(v)
	quantiseBy(codes, v, m)
	pack(hi, lo, codes)
	return float32(float64(m) / 127 * inv)
}

// quantiseBy writes the int8 codes of v, whose largest magnitude is m > 0,
// into dst: 127 for m, in float64 so that any finite m has an inverse.
func quantiseBy(dst []int8, v []float32, m float32) {
	inv := 127 / float64(m)
	for i, x := range v {
		// math.Round (half away from zero), which the compiler does not
		// inline: a third of a large index's load went to it.
		c := float64(x) * inv
		if c < 0 {
			dst[i] = int8(max(-127, int32(c-0.5)))
		} else {
			dst[i] = int8(min(127, int32(c+0.5)))
		}
	}
}

// pack splits codes (a multiple of 32 of them) into digit planes.
func pack(hi, lo []byte, codes []int8) {
	for b := 0; b < len(codes); b += 32 {
		for i := range 16 {
			d0, d1 := uint8(int(codes[b+i])+128), uint8(int(codes[b+i+16])+128)
			hi[b/2+i] = d0>>4 | d1&0xf0
			lo[b/2+i] = d0&0x0f | d1<<4
		}
	}
}

// encodeQuery quantises the unit query u to int16 codes within bound and
// returns the scale that maps them back.
func encodeQuery(dst []int16, u []float32, bound int) float32 {
	scale := maxAbs(u) / float32(bound)
	inv := 1 / scale
	for i, x := range u {
		c := math.Round(float64(x * inv))
		dst[i] = int16(max(-float64(bound), min(float64(bound), c)))
	}
	return scale
}

// maxAbs is the largest magnitude in v, which is finite (see invNorm):
// the magnitudes compared as their bits, which order finite floats alike,
// compile to a branchless loop, where max on floats must mind NaN.
func maxAbs(v []float32) float32 {
	var m uint32
	for _, x := range v {
		m = max(m, math.Float32bits(x)&0x7fffffff)
	}
	return math.Float32frombits(m)
}

// dot is the float dot product of rescoring: the encoder's kernel (AVX2
// where the CPU has it).
func dot(a, b []float32) float32 { return kernel.Dot(a, b[:len(a)]) }
