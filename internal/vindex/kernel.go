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
