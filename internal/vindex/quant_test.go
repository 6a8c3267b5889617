package vindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestEncodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, dim := range []int{1, 5, 384, 3072} {
		u, _ := unit(gaussian(r, dim))
		codes := make([]int8, dim)
		scale := quantise(codes, u)
		for j, x := range u {
			if err := math.Abs(float64(x - float32(codes[j])*scale)); err > float64(scale)/2*1.0001 {
				t.Fatalf("dim %d component %d: error %g over half a step %g", dim, j, err, scale/2)
			}
		}
		if m := slices.Max(codes); m != 127 && slices.Min(codes) != -127 {
			t.Fatalf("dim %d: codes do not use the full range (max %d)", dim, m)
		}

		bound := queryBound(dim)
		q := make([]int16, dim)
		qs := encodeQuery(q, u, bound)
		for j, x := range u {
			if int(q[j]) > bound || int(q[j]) < -bound {
				t.Fatalf("dim %d: query code %d beyond bound %d", dim, q[j], bound)
			}
			if err := math.Abs(float64(x - float32(q[j])*qs)); err > float64(qs)/2*1.0001 {
				t.Fatalf("dim %d query component %d: error %g", dim, j, err)
			}
		}
	}
}

// BenchmarkQuantisation compares per-vector with per-dimension int8 scales
// by recall@10 of the codes alone against exact float search, both scored
// the same way (float query against decoded codes). The per-dimension
// scales are fitted to the very data they encode, which favours them; an
// index that grows one vector at a time could not do even that.
//
// Run: go test -run '^$' -bench Quantisation -benchtime 1x ./internal/vindex/
func BenchmarkQuantisation(b *testing.B) {
	const n, dim = 100_000, benchDim
	sets := []struct {
		name string
		d    *dataset
	}{
		{"uniform", uniform(dim, 1)},
		{"clustered", clustered(dim, 2, n/1000, 0.5)},
	}
	for _, set := range sets {
		d := set.d
		qs := make([][]float32, 50)
		for i := range qs {
			qs[i] = d.query(i)
		}
		vecs := make([][]float32, n)
		truth := newExactTop(qs, 10)
		for i := range vecs {
			vecs[i] = d.vector(i)
			truth.see(i, vecs[i])
		}

		perVector := make([][]float32, n)
		for i, v := range vecs {
			codes := make([]int8, dim)
			s := quantise(codes, v)
			perVector[i] = decode(codes, func(int) float32 { return s }, func(int) float32 { return 0 })
		}
		lo, hi := make([]float32, dim), make([]float32, dim)
		for j := range dim {
			lo[j], hi[j] = 1, -1
			for _, v := range vecs {
				lo[j], hi[j] = min(lo[j], v[j]), max(hi[j], v[j])
			}
		}
		perDim := make([][]float32, n)
		step := func(j int) float32 { return (hi[j] - lo[j]) / 255 }
		offset := func(j int) float32 { return lo[j] + 128*step(j) }
		for i, v := range vecs {
			codes := make([]int8, dim)
			for j, x := range v {
				codes[j] = int8(math.Round(float64((x - offset(j)) / step(j))))
			}
			perDim[i] = decode(codes, step, offset)
		}

		for _, q := range []struct {
			name    string
			decoded [][]float32
		}{{"per-vector", perVector}, {"per-dimension", perDim}} {
			b.Run(set.name+"/"+q.name, func(b *testing.B) {
				var sum float64
				for b.Loop() {
					sum = 0
					for qi, query := range qs {
						got := newExactTop([][]float32{query}, 10)
						for i, v := range q.decoded {
							got.see(i, v)
						}
						res := make([]Result, 0, 10)
						for _, s := range got.best[0] {
							res = append(res, Result{Key: hashOf(s.i)})
						}
						sum += recallAt(truth.best[qi], res)
					}
				}
				b.ReportMetric(sum/float64(len(qs)), "recall@10")
			})
		}
	}
}

func decode(codes []int8, step, offset func(j int) float32) []float32 {
	v := make([]float32, len(codes))
	for j, c := range codes {
		v[j] = float32(c)*step(j) + offset(j)
	}
	return v
}

// invNorm sums squares in float32 and again in float64 only when that
// overflows or underflows: vectors of huge or tiny finite components are
// still indexable, zero and non-finite ones are not.
func TestInvNorm(t *testing.T) {
	for _, c := range []struct {
		v    []float32
		want float64 // 0: not ok
	}{
		{[]float32{3, 4}, 0.2},
		{[]float32{3e30, 4e30}, 0.2e-30},
		{[]float32{3e-30, 4e-30}, 0.2e30},
		{slices.Repeat([]float32{1e-22}, 384), 1 / math.Sqrt(384) * 1e22}, // a sum of squares below float32's normal range
		{[]float32{3e-45, 4e-45}, 1 / math.Hypot(float64(float32(3e-45)), float64(float32(4e-45)))},
		{[]float32{0, 0}, 0},
		{[]float32{1, float32(math.NaN())}, 0},
		{[]float32{1, float32(math.Inf(1))}, 0},
	} {
		inv, ok := invNorm(c.v)
		if ok != (c.want != 0) || ok && math.Abs(inv-c.want)/c.want > 1e-6 {
			t.Errorf("invNorm(%v) = %g, %v; want %g", c.v, inv, ok, c.want)
		}
	}
}

// A vector's codes and scale do not depend on its magnitude, down to
// float32's smallest: encoding v gives what encoding v/|v| gives.
func TestEncodeAnyMagnitude(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, mag := range []float64{1e-44, 1e-40, 1e-37, 1e-20, 1, 1e20, 1e37} {
		for _, dim := range []int{3, 40, 384} {
			v := gaussian(r, dim)
			for i := range v {
				v[i] = float32(float64(v[i]) * mag)
			}
			u, ok := unit(v)
			if !ok {
				t.Fatalf("magnitude %g: not a vector", mag)
			}
			if mag < 1e-38 {
				continue // v's components are subnormal: its direction is not u's to the bit
			}
			p := paddedDim(dim)
			hi, lo, codes := make([]byte, p/2), make([]byte, p/2), make([]int8, p)
			wantHi, wantLo := make([]byte, p/2), make([]byte, p/2)
			want := make([]int8, p)
			wantScale := quantise(want, u)
			pack(wantHi, wantLo, want)
			inv, _ := invNorm(v)
			scale := encode(hi, lo, v, inv, codes)
			if math.Abs(float64(scale-wantScale)) > 1e-6*float64(wantScale) {
				t.Errorf("magnitude %g dim %d: scale %g, want %g", mag, dim, scale, wantScale)
			}
			if diff := codeDiff(codes[:dim], want[:dim]); diff > 1 {
				t.Errorf("magnitude %g dim %d: codes differ by %d", mag, dim, diff)
			}
		}
	}
	// Subnormal components still give full-range codes and a non-zero scale.
	v := []float32{1e-44, -5e-45, 2e-45}
	codes := make([]int8, paddedDim(len(v)))
	hi, lo := make([]byte, len(codes)/2), make([]byte, len(codes)/2)
	inv, _ := invNorm(v)
	if scale := encode(hi, lo, v, inv, codes); scale <= 0 || codes[0] != 127 || codes[1] >= 0 {
		t.Errorf("subnormal vector: scale %g, codes %v", scale, codes[:3])
	}
}

func codeDiff(a, b []int8) int {
	d := 0
	for i := range a {
		d = max(d, int(a[i])-int(b[i]), int(b[i])-int(a[i]))
	}
	return d
}

// quantise writes the int8 codes of v into dst and returns the scale that
// maps them back: encode's codes, without the planes.
func quantise(dst []int8, v []float32) float32 {
	m := maxAbs(v)
	quantiseBy(dst, v, m)
	return m / 127
}
