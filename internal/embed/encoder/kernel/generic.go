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
		h := 0.5 * v
		x[i] = h + h*erf32(v*math.Sqrt2/2)
	}
}

// matMulTGeneric is the portable product: outputs are dot products of two
// contiguous rows, computed two rows by four columns at a time so each load
// feeds two or four multiply-adds, with row blocks spread over the cores.
func matMulTGeneric(dst, a, b, bias []float32, m, k, n int) {
	const rows = 16
	blocks := (m + rows - 1) / rows
	w := workers()
	if m*n*k < parallelMin {
		w = 1
	}
	parallelFor(min(w, blocks), blocks, func(blk int) {
		i1 := min(m, (blk+1)*rows)
		for i := blk * rows; i < i1; i += 2 {
			if i+1 == i1 {
				matMulRows1(dst[i*n:(i+1)*n], a[i*k:(i+1)*k], b, bias, k, n)
				continue
			}
			matMulRows2(dst[i*n:(i+2)*n], a[i*k:(i+2)*k], b, bias, k, n)
		}
	})
}

func matMulRows1(dst, a, b, bias []float32, k, n int) {
	for j := 0; j < n; j++ {
		s := dotGeneric(a, b[j*k:(j+1)*k])
		if bias != nil {
			s += bias[j]
		}
		dst[j] = s
	}
}

// matMulRows2 fills two rows of dst from two rows of a.
func matMulRows2(dst, a, b, bias []float32, k, n int) {
	a0, a1 := a[:k], a[k:2*k]
	a1 = a1[:len(a0)] // equal lengths let the compiler drop bounds checks
	j := 0
	for ; j+4 <= n; j += 4 {
		b0, b1, b2, b3 := b[j*k:(j+1)*k], b[(j+1)*k:(j+2)*k], b[(j+2)*k:(j+3)*k], b[(j+3)*k:(j+4)*k]
		b0, b1, b2, b3 = b0[:len(a0)], b1[:len(a0)], b2[:len(a0)], b3[:len(a0)]
		var s00, s01, s02, s03, s10, s11, s12, s13 float32
		for p, x0 := range a0 {
			x1 := a1[p]
			y0, y1, y2, y3 := b0[p], b1[p], b2[p], b3[p]
			s00 += x0 * y0
			s01 += x0 * y1
			s02 += x0 * y2
			s03 += x0 * y3
			s10 += x1 * y0
			s11 += x1 * y1
			s12 += x1 * y2
			s13 += x1 * y3
		}
		if bias != nil {
			s00 += bias[j]
			s01 += bias[j+1]
			s02 += bias[j+2]
			s03 += bias[j+3]
			s10 += bias[j]
			s11 += bias[j+1]
			s12 += bias[j+2]
			s13 += bias[j+3]
		}
		dst[j], dst[j+1], dst[j+2], dst[j+3] = s00, s01, s02, s03
		dst[n+j], dst[n+j+1], dst[n+j+2], dst[n+j+3] = s10, s11, s12, s13
	}
	for ; j < n; j++ {
		bj := b[j*k : (j+1)*k]
		s0, s1 := dotGeneric(a0, bj), dotGeneric(a1, bj)
		if bias != nil {
			s0 += bias[j]
			s1 += bias[j]
		}
		dst[j], dst[n+j] = s0, s1
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
		e := exp32(v - max)
		row[i] = e
		sum += e
	}
	inv := 1 / sum
	for i := range row {
		row[i] *= inv
	}
}
