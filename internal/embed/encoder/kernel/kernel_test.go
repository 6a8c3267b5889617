package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func naiveMatMulT(a, b, bias []float32, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			if bias != nil {
				s = float64(bias[j])
			}
			for p := 0; p < k; p++ {
				s += float64(a[i*k+p]) * float64(b[j*k+p])
			}
			out[i*n+j] = s
		}
	}
	return out
}

// closeTo allows float32 rounding that grows with the length of the sum.
func closeTo(got float32, want float64, k int) bool {
	tol := 1e-5 * math.Sqrt(float64(k+1)) * (1 + math.Abs(want))
	return math.Abs(float64(got)-want) <= tol
}

func TestMatMulT(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		shapes := [][3]int{
			{0, 0, 0}, {0, 5, 3}, {3, 0, 4}, {1, 1, 1}, {1, 7, 1}, {2, 3, 5},
			{5, 17, 9}, {13, 31, 7}, {16, 64, 48}, {17, 65, 49}, {33, 384, 31},
			{64, 128, 64}, {97, 100, 129}, {130, 384, 67},
		}
		r := rand.New(rand.NewPCG(1, 2))
		for _, s := range shapes {
			m, k, n := s[0], s[1], s[2]
			a, b := randSlice(r, m*k), randSlice(r, n*k)
			for _, withBias := range []bool{false, true} {
				var bias []float32
				if withBias {
					bias = randSlice(r, n)
				}
				want := naiveMatMulT(a, b, bias, m, k, n)
				dst := randSlice(r, m*n) // garbage: MatMulT must overwrite, not accumulate
				MatMulT(dst, a, b, bias, m, k, n)
				for i := range want {
					if !closeTo(dst[i], want[i], k) {
						t.Fatalf("m=%d k=%d n=%d bias=%v: dst[%d]=%g want %g", m, k, n, withBias, i, dst[i], want[i])
					}
				}
			}
		}
	})
}

func TestDotAxpy(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, n := range []int{0, 1, 3, 7, 8, 15, 16, 31, 33, 64, 100, 384, 1000} {
			a, b := randSlice(r, n), randSlice(r, n)
			var want float64
			for i := range a {
				want += float64(a[i]) * float64(b[i])
			}
			if got := Dot(a, b); !closeTo(got, want, n) {
				t.Errorf("Dot n=%d: %g want %g", n, got, want)
			}
			y := append([]float32(nil), b...)
			Axpy(0.75, a, y)
			for i := range y {
				w := float64(b[i]) + 0.75*float64(a[i])
				if !closeTo(y[i], w, 1) {
					t.Fatalf("Axpy n=%d: y[%d]=%g want %g", n, i, y[i], w)
				}
			}
		}
	})
}

func TestAddScale(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range []int{0, 1, 9, 64, 385} {
			x, y := randSlice(r, n), randSlice(r, n)
			d := append([]float32(nil), y...)
			Add(d, x)
			for i := range d {
				if d[i] != y[i]+x[i] {
					t.Fatalf("Add n=%d: [%d]=%g want %g", n, i, d[i], y[i]+x[i])
				}
			}
			Scale(d, -0.5)
			for i := range d {
				if w := (y[i] + x[i]) * -0.5; d[i] != w {
					t.Fatalf("Scale n=%d: [%d]=%g want %g", n, i, d[i], w)
				}
			}
		}
	})
}

func TestGELU(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		var x []float32
		for v := -12.0; v <= 12; v += 0.01 {
			x = append(x, float32(v))
		}
		x = append(x, 0, -0, 30, -30, 1e-8, -1e-8)
		in := append([]float32(nil), x...)
		GELU(x)
		for i, v := range in {
			want := 0.5 * float64(v) * (1 + math.Erf(float64(v)/math.Sqrt2))
			if math.Abs(float64(x[i])-want) > 2e-6*math.Max(1, math.Abs(want))+1e-7 {
				t.Fatalf("GELU(%g)=%g want %g", v, x[i], want)
			}
		}
	})
}

func TestLayerNorm(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, s := range [][2]int{{0, 0}, {1, 1}, {1, 7}, {3, 384}, {5, 33}, {2, 1536}} {
			rows, cols := s[0], s[1]
			x := randSlice(r, rows*cols)
			for i := range x {
				x[i] = x[i]*3 + 100 // large offset: catches one-pass variance
			}
			g, b := randSlice(r, cols), randSlice(r, cols)
			in := append([]float32(nil), x...)
			LayerNorm(x, g, b, rows, cols, 1e-12)
			for row := 0; row < rows; row++ {
				v := in[row*cols : (row+1)*cols]
				var mean, vr float64
				for _, e := range v {
					mean += float64(e)
				}
				mean /= float64(cols)
				for _, e := range v {
					vr += (float64(e) - mean) * (float64(e) - mean)
				}
				vr /= float64(cols)
				for c := range v {
					want := (float64(v[c])-mean)/math.Sqrt(vr+1e-12)*float64(g[c]) + float64(b[c])
					if !closeTo(x[row*cols+c], want, 30) {
						t.Fatalf("LayerNorm %dx%d [%d,%d]=%g want %g", rows, cols, row, c, x[row*cols+c], want)
					}
				}
			}
		}
	})
}

func TestSoftmaxRows(t *testing.T) {
	forEachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, s := range [][2]int{{0, 0}, {1, 1}, {2, 3}, {4, 17}, {3, 128}, {2, 256}} {
			rows, cols := s[0], s[1]
			x := randSlice(r, rows*cols)
			for i := range x {
				x[i] *= 20
			}
			if cols > 2 {
				x[1] = -1e4 // the attention mask's large negative bias
				x[2] = 1e4
			}
			in := append([]float32(nil), x...)
			SoftmaxRows(x, rows, cols)
			for row := 0; row < rows; row++ {
				v := in[row*cols : (row+1)*cols]
				max := math.Inf(-1)
				for _, e := range v {
					max = math.Max(max, float64(e))
				}
				var sum float64
				for _, e := range v {
					sum += math.Exp(float64(e) - max)
				}
				for c := range v {
					want := math.Exp(float64(v[c])-max) / sum
					got := float64(x[row*cols+c])
					if math.Abs(got-want) > 1e-6*want+1e-9 {
						t.Fatalf("Softmax %dx%d [%d,%d]=%g want %g", rows, cols, row, c, got, want)
					}
				}
			}
		}
	})
}

// TestMatMulTSplits forces the work split of the packed path through its
// branches: one worker, more workers than row blocks (columns split too),
// and an odd worker count that leaves units of unequal size.
func TestMatMulTSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	saved, savedMin := workers, parallelMin
	defer func() { workers, parallelMin = saved, savedMin }()
	parallelMin = 0
	for _, w := range []int{1, 2, 3, 8} {
		workers = func() int { return w }
		for _, s := range [][3]int{{7, 384, 1536}, {200, 64, 100}, {250, 300, 70}, {13, 1536, 33}, {1, 600, 500}} {
			m, k, n := s[0], s[1], s[2]
			a, b, bias := randSlice(r, m*k), randSlice(r, n*k), randSlice(r, n)
			want := naiveMatMulT(a, b, bias, m, k, n)
			forEachImpl(t, func(t *testing.T) {
				dst := randSlice(r, m*n)
				MatMulT(dst, a, b, bias, m, k, n)
				for i := range want {
					if !closeTo(dst[i], want[i], k) {
						t.Fatalf("workers=%d m=%d k=%d n=%d: dst[%d]=%g want %g", w, m, k, n, i, dst[i], want[i])
					}
				}
			})
		}
	}
}

func TestShortSlicesPanic(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MatMulT with a short dst did not panic")
		}
	}()
	MatMulT(make([]float32, 3), make([]float32, 4), make([]float32, 4), nil, 2, 2, 2)
}

func TestExp32(t *testing.T) {
	for x := float32(-87); x <= 88; x += 0.01 {
		want := math.Exp(float64(x))
		if got := float64(exp32(x)); math.Abs(got-want) > 3e-7*want {
			t.Fatalf("exp32(%g) = %g, want %g", x, got, want)
		}
	}
	// Far below the clamp the result is the smallest normal-range value,
	// negligible next to any softmax row's maximum term (which is 1).
	if got := exp32(-1e30); got <= 0 || got > 1e-37 {
		t.Errorf("exp32(-1e30) = %g, want a tiny positive number", got)
	}
	if got := exp32(float32(math.Inf(-1))); got > 1e-37 {
		t.Errorf("exp32(-Inf) = %g", got)
	}
}

// TestMatMulStrided checks both strided products against the naive one on
// copies of the operands laid out densely, and that dst's gaps between rows
// are left alone.
func TestMatMulStrided(t *testing.T) {
	savedMin := parallelMin
	defer func() { parallelMin = savedMin }()
	parallelMin = 0 // split even these small products across workers
	r := rand.New(rand.NewPCG(13, 14))
	shapes := [][3]int{{0, 3, 4}, {1, 1, 1}, {5, 0, 3}, {7, 32, 9}, {13, 33, 40}, {256, 32, 256}, {100, 256, 32}, {30, 300, 70}}
	for _, s := range shapes {
		m, k, n := s[0], s[1], s[2]
		lda, ldb, ldc := k+3, max(k, n)+5, n+2
		a, bN, bT := randSlice(r, m*lda), randSlice(r, k*ldb), randSlice(r, n*ldb)
		bias := randSlice(r, n)
		// Dense copies for the reference: b as n×k in both cases.
		dense, denseA := make([]float32, n*k), make([]float32, m*k)
		for i := 0; i < m; i++ {
			copy(denseA[i*k:(i+1)*k], a[i*lda:])
		}
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				dense[j*k+p] = bN[p*ldb+j]
			}
		}
		wantN := naiveMatMulT(denseA, dense, bias, m, k, n)
		for j := 0; j < n; j++ {
			copy(dense[j*k:(j+1)*k], bT[j*ldb:])
		}
		wantT := naiveMatMulT(denseA, dense, nil, m, k, n)
		forEachImpl(t, func(t *testing.T) {
			for _, c := range []struct {
				name string
				mul  func(dst []float32)
				want []float64
			}{
				{"MatMulStrided", func(dst []float32) { MatMulStrided(dst, a, bN, bias, m, k, n, lda, ldb, ldc) }, wantN},
				{"MatMulTStrided", func(dst []float32) { MatMulTStrided(dst, a, bT, nil, m, k, n, lda, ldb, ldc) }, wantT},
			} {
				dst := make([]float32, m*ldc)
				for i := range dst {
					dst[i] = -7
				}
				c.mul(dst)
				for i := 0; i < m; i++ {
					for j := 0; j < ldc; j++ {
						got := dst[i*ldc+j]
						if j >= n {
							if got != -7 {
								t.Fatalf("%s m=%d k=%d n=%d: wrote the gap at [%d,%d]", c.name, m, k, n, i, j)
							}
							continue
						}
						if !closeTo(got, c.want[i*n+j], k) {
							t.Fatalf("%s m=%d k=%d n=%d: [%d,%d]=%g want %g", c.name, m, k, n, i, j, got, c.want[i*n+j])
						}
					}
				}
			}
		})
	}
}

func TestMatMulStridedRejectsShortRows(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("lda < k did not panic")
		}
	}()
	MatMulTStrided(make([]float32, 4), make([]float32, 8), make([]float32, 8), nil, 2, 4, 2, 3, 4, 2)
}
