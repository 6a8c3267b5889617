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

func addGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

func scaleGeneric(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

func layerNormRowGeneric(row, gamma, beta []float32, eps float32) {
	// Two passes in float64 keep the variance exact enough for rows of a few
	// thousand values with a large common offset, which one-pass sums lose.
	var sum float64
	for _, v := range row {
		sum += float64(v)
	}
	mean := sum / float64(len(row))
	var ss float64
	for _, v := range row {
		d := float64(v) - mean
		ss += d * d
	}
	inv := float32(1 / math.Sqrt(ss/float64(len(row))+float64(eps)))
	m := float32(mean)
	for i, v := range row {
		row[i] = (v-m)*inv*gamma[i] + beta[i]
	}
}

func softmaxRowGeneric(row []float32) {
	max := row[0]
	for _, v := range row[1:] {
		if v > max {
			max = v
		}
	}
	var sum float32
	for i, v := range row {
		e := float32(math.Exp(float64(v - max)))
		row[i] = e
		sum += e
	}
	inv := 1 / sum
	for i := range row {
		row[i] *= inv
	}
}
