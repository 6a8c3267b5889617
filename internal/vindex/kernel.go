package vindex

// dotDigits writes to out[i] the dot product of q with the digits of the
// i-th vector of plane (stride bytes each, see pack): Σ q[j]·digit[j]. It is
// the hot loop of every search, so it is implemented in assembly where the
// CPU allows (see kernel_amd64.go). len(q) is 2·stride, a multiple of 32.
//
// Digits are at most 15, so with |q[j]| <= queryBound(len(q)) no sum
// overflows int32.
var dotDigits = dotDigitsGeneric

// dotDigitsGeneric is the portable kernel, also the reference the assembly
// is tested against.
func dotDigitsGeneric(q []int16, plane []byte, stride int, out []int32) {
	q = q[:2*stride]
	for i := range out {
		p := plane[i*stride : i*stride+stride]
		var s0, s1 int32
		for b := 0; b+16 <= len(p); b += 16 {
			pb, lo, hi := p[b:b+16:b+16], q[2*b:2*b+16:2*b+16], q[2*b+16:2*b+32:2*b+32]
			for t, d := range pb {
				s0 += int32(lo[t]) * int32(d&0x0f)
				s1 += int32(hi[t]) * int32(d>>4)
			}
		}
		out[i] = s0 + s1
	}
}

// dotDigits8 is dotDigits against a query of signed bytes laid out like the
// plane: qlo[p] multiplies the low digit of plane byte p, qhi[p] its high
// digit (see splitQuery8). The scan uses it where it has a kernel of its
// own (AVX-512 VNNI, AVX2), which multiplies twice the dimensions an
// instruction that a 16-bit query allows; with a query of 8 bits instead of 15
// its scores only choose candidates, whose high-digit products are then
// computed again by dotDigits.
var dotDigits8 = dotDigits8Generic

// kernels8 holds, by name, every byte-query kernel of its own this CPU can
// run (dotDigits8 is the best of them), so tests check each against the
// portable one.
var kernels8 = map[string]func(qlo, qhi []int8, plane []byte, stride int, out []int32){}

// fastDotDigits8 reports whether dotDigits8 has a kernel of its own: only
// then is the scan worth doing with it.
func fastDotDigits8() bool { return len(kernels8) > 0 }

func dotDigits8Generic(qlo, qhi []int8, plane []byte, stride int, out []int32) {
	qlo, qhi = qlo[:stride], qhi[:stride]
	for i := range out {
		p := plane[i*stride : i*stride+stride]
		var s int32
		for j, d := range p {
			s += int32(qlo[j])*int32(d&0x0f) + int32(qhi[j])*int32(d>>4)
		}
		out[i] = s
	}
}

// splitQuery8 writes q8, a query of 2·stride signed bytes in dimension
// order, as the two byte arrays dotDigits8 takes: plane byte p = 16·b + t
// holds dimension 32·b + t in its low digit and 32·b + 16 + t in its high
// digit (see pack).
func splitQuery8(qlo, qhi []int8, q8 []int8) {
	for p := range qlo {
		b, t := p/16, p%16
		qlo[p] = q8[32*b+t]
		qhi[p] = q8[32*b+16+t]
	}
}
