package vindex

// dotBatch writes to out[i] the dot product of q with the i-th dim-long vector
// of codes, for i in [0, len(out)). It is the hot loop of every search, so it
// is implemented in assembly where the CPU allows (see kernel_amd64.go).
//
// Sums are exact in int32 as long as |q[j]| <= queryBound(dim): quantise
// queries with that bound.
var dotBatch = dotBatchGeneric

// dotBatchGeneric is the portable kernel, also the reference the assembly is
// tested against.
func dotBatchGeneric(q []int16, codes []int8, dim int, out []int32) {
	q = q[:dim]
	for i := range out {
		x := codes[i*dim : i*dim+dim]
		x = x[:len(q)] // lets the compiler drop the bounds checks below
		var s0, s1, s2, s3 int32
		j := 0
		for ; j+4 <= len(q); j += 4 {
			qq, xx := q[j:j+4:j+4], x[j:j+4:j+4]
			s0 += int32(qq[0]) * int32(xx[0])
			s1 += int32(qq[1]) * int32(xx[1])
			s2 += int32(qq[2]) * int32(xx[2])
			s3 += int32(qq[3]) * int32(xx[3])
		}
		for ; j < len(q); j++ {
			s0 += int32(q[j]) * int32(x[j])
		}
		out[i] = s0 + s1 + s2 + s3
	}
}
