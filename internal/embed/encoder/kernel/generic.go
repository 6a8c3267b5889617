package kernel

import "math"

func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGeneric(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func geluGeneric(x []float32) {
	for i, v := range x {
		x[i] = float32(0.5 * float64(v) * (1 + math.Erf(float64(v)*math.Sqrt2/2)))
	}
}

// matMulTGeneric is the portable product: each output is a dot product of
// two contiguous rows, so it needs no packing.
func matMulTGeneric(dst, a, b, bias []float32, m, k, n int) {
	for i := 0; i < m; i++ {
		ai := a[i*k : (i+1)*k]
		di := dst[i*n : (i+1)*n]
		for j := 0; j < n; j++ {
			s := dotGeneric(ai, b[j*k:(j+1)*k])
			if bias != nil {
				s += bias[j]
			}
			di[j] = s
		}
	}
}
