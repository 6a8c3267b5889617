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

// matMulGeneric is the portable product, spread over the cores by blocks
// of rows.
func matMulGeneric(pr product) {
	const rows = 16
	m, k, n := pr.m, pr.k, pr.n
	blocks := (m + rows - 1) / rows
	w := workers()
	if m*n*k < parallelMin {
		w = 1
	}
	parallelFor(min(w, blocks), blocks, func(blk int) {
		i1 := min(m, (blk+1)*rows)
		for i := blk * rows; i < i1; i++ {
			if !pr.bT {
				matMulRowN(pr, i)
				continue
			}
			if i+1 < i1 {
				matMulRows2T(pr, i)
				i++
				continue
			}
			matMulRowT(pr, i)
		}
	})
}

// matMulRowT fills row i of dst from b laid out n×k: one dot product per
// output, over two contiguous rows.
func matMulRowT(pr product, i int) {
	a := pr.a[i*pr.lda : i*pr.lda+pr.k]
	dst := pr.dst[i*pr.ldc : i*pr.ldc+pr.n]
	for j := range dst {
		s := dotGeneric(a, pr.b[j*pr.ldb:j*pr.ldb+pr.k])
		if pr.bias != nil {
			s += pr.bias[j]
		}
		dst[j] = s
	}
}

// matMulRows2T fills rows i and i+1 of dst, four columns at a time, so each
// value loaded feeds two or four multiply-adds.
func matMulRows2T(pr product, i int) {
	k, n, ldb := pr.k, pr.n, pr.ldb
	a0 := pr.a[i*pr.lda : i*pr.lda+k]
	a1 := pr.a[(i+1)*pr.lda : (i+1)*pr.lda+k]
	a1 = a1[:len(a0)] // equal lengths let the compiler drop bounds checks
	d0 := pr.dst[i*pr.ldc : i*pr.ldc+n]
	d1 := pr.dst[(i+1)*pr.ldc : (i+1)*pr.ldc+n]
	j := 0
	for ; j+4 <= n; j += 4 {
		b0, b1, b2, b3 := pr.b[j*ldb:j*ldb+k], pr.b[(j+1)*ldb:(j+1)*ldb+k], pr.b[(j+2)*ldb:(j+2)*ldb+k], pr.b[(j+3)*ldb:(j+3)*ldb+k]
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
		if pr.bias != nil {
			c0, c1, c2, c3 := pr.bias[j], pr.bias[j+1], pr.bias[j+2], pr.bias[j+3]
			s00, s01, s02, s03 = s00+c0, s01+c1, s02+c2, s03+c3
			s10, s11, s12, s13 = s10+c0, s11+c1, s12+c2, s13+c3
		}
		d0[j], d0[j+1], d0[j+2], d0[j+3] = s00, s01, s02, s03
		d1[j], d1[j+1], d1[j+2], d1[j+3] = s10, s11, s12, s13
	}
	for ; j < n; j++ {
		bj := pr.b[j*ldb : j*ldb+k]
		s0, s1 := dotGeneric(a0, bj), dotGeneric(a1, bj)
		if pr.bias != nil {
			s0 += pr.bias[j]
			s1 += pr.bias[j]
		}
		d0[j], d1[j] = s0, s1
	}
}

// matMulRowN fills row i of dst from b laid out k×n: the row is a sum of
// b's rows scaled by a's entries.
func matMulRowN(pr product, i int) {
	dst := pr.dst[i*pr.ldc : i*pr.ldc+pr.n]
	if pr.bias != nil {
		copy(dst, pr.bias[:pr.n])
	} else {
		clear(dst)
	}
	for p, x := range pr.a[i*pr.lda : i*pr.lda+pr.k] {
		axpyGeneric(x, pr.b[p*pr.ldb:p*pr.ldb+pr.n], dst)
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
