package vindex

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
)

// TestFWHTMatchesTheMatrix checks the fast transform against the Hadamard
// matrix itself, H[i][j] = (−1)^popcount(i & j), at every size a rotation
// can have.
func TestFWHTMatchesTheMatrix(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for size := 8; size <= 1024; size *= 2 {
		in := make([]int32, size)
		for i := range in {
			in[i] = int32(r.IntN(255) - 127)
		}
		want := make([]int32, size)
		for i := range want {
			for j, v := range in {
				if bits.OnesCount(uint(i&j))%2 == 1 {
					want[i] -= v
				} else {
					want[i] += v
				}
			}
		}
		got := slices.Clone(in)
		fwht(got)
		if !slices.Equal(got, want) {
			t.Fatalf("size %d: fwht %v, want %v", size, got[:8], want[:8])
		}
		// The portable levels too, where assembly was selected.
		saved := fwhtWide
		fwhtWide = fwhtWideGeneric
		got = slices.Clone(in)
		fwht(got)
		fwhtWide = saved
		if !slices.Equal(got, want) {
			t.Fatalf("size %d: portable fwht %v, want %v", size, got[:8], want[:8])
		}
	}
}

// TestFlipAndPositiveMatchGeneric runs the selected kernels of the
// rotation's other steps against the portable ones.
func TestFlipAndPositiveMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, n := range []int{64, 128, 512, 2048} {
		buf := make([]int32, n)
		f := make([]int32, n)
		for i := range buf {
			buf[i] = int32(r.Uint32())
			f[i] = -int32(r.IntN(2))
		}
		buf[0], buf[1] = 0, -1
		for _, shift := range []uint{0, 1, 4, 8} {
			got, want := slices.Clone(buf), slices.Clone(buf)
			flip(got, f, shift)
			flipGeneric(want, f, shift)
			if !slices.Equal(got, want) {
				t.Fatalf("n %d shift %d: flip %v, generic %v", n, shift, got[:4], want[:4])
			}
		}
		got, want := make([]uint64, n/64), make([]uint64, n/64)
		positive(buf, got)
		positiveGeneric(buf, want)
		if !slices.Equal(got, want) {
			t.Fatalf("n %d: positive %x, generic %x", n, got, want)
		}
		if want[0]&3 != 0 {
			t.Fatalf("0 and -1 counted as positive: %b", want[0]&3)
		}
	}
}

// TestHammingMatchesGeneric runs the selected kernel (assembly where the
// CPU has POPCNT) against the portable one, counts and histogram.
func TestHammingMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, words := range []int{1, 2, 6, 24} {
		for _, n := range []int{0, 1, 3, 64, 1000} {
			signs := make([]uint64, n*words)
			for i := range signs {
				signs[i] = r.Uint64()
			}
			qs := make([]uint64, words)
			for i := range qs {
				qs[i] = r.Uint64()
			}
			if n > 0 {
				// The extremes: a row equal to the query, and its complement.
				copy(signs, qs)
				if n > 1 {
					for j := range words {
						signs[words+j] = ^qs[j]
					}
				}
			}
			got, want := make([]uint16, n), make([]uint16, n)
			ghist, whist := make([]int, words*64+2), make([]int, words*64+2)
			hamming(signs, qs, got, ghist)
			hammingGeneric(signs, qs, want, whist)
			if !slices.Equal(got, want) || !slices.Equal(ghist, whist) {
				t.Fatalf("%d words, %d rows: kernel %v, generic %v", words, n, got[:min(n, 4)], want[:min(n, 4)])
			}
			if n > 1 && (want[0] != 0 || int(want[1]) != words*64) {
				t.Fatalf("%d words: the query itself differs in %d bits, its complement in %d", words, want[0], want[1])
			}
		}
	}
}

// TestSignsEstimateTheAngle: after the rotation, the share of sign bits in
// which two vectors differ estimates their angle over π, whatever their
// directions, and the bound the scan reads up to is exceeded about as
// rarely as its binomial model says. The pairs are drawn with much of their
// length on a few coordinates, as real embeddings have, where signs taken
// without the rotation would say little.
func TestSignsEstimateTheAngle(t *testing.T) {
	const dim, pairs = 384, 3000
	r := rand.New(rand.NewPCG(5, 5))
	x := New(dim, nil)
	nb := x.words * 64
	skewed := func() []float32 {
		v := gaussian(r, dim)
		for j := range 8 {
			v[j] *= 12
		}
		normalise(v)
		return v
	}
	for _, cos := range []float64{0, 0.3, 0.6, 0.8, 0.95} {
		var sum float64
		over := 0
		for range pairs {
			a, n := skewed(), skewed()
			// b: at cosine cos with a (n made orthogonal to a first).
			d := float64(dot(a, n))
			b := make([]float32, dim)
			var nn float64
			for j := range n {
				o := float64(n[j]) - d*float64(a[j])
				b[j] = float32(o)
				nn += o * o
			}
			for j := range b {
				b[j] = float32(cos*float64(a[j]) + math.Sqrt(1-cos*cos)*float64(b[j])/math.Sqrt(nn))
			}
			sa, sb := x.signsOf(a), x.signsOf(b)
			h := 0
			for j := range sa {
				h += bits.OnesCount64(sa[j] ^ sb[j])
			}
			sum += float64(h)
			if h > hammingBound(nb, cos) {
				over++
			}
		}
		mean, want := sum/pairs/float64(nb), math.Acos(cos)/math.Pi
		if math.Abs(mean-want) > 0.01 {
			t.Errorf("cosine %.2f: %.4f of the bits differ on average, want θ/π = %.4f", cos, mean, want)
		}
		// 4 standard deviations: 3·10⁻⁵ of pairs in the model; allow 10⁻³.
		if over > pairs/1000 {
			t.Errorf("cosine %.2f: %d of %d pairs beyond the bound", cos, over, pairs)
		}
	}
}

// signsOf returns the sign bits the index would keep for v.
func (x *Index) signsOf(v []float32) []uint64 {
	codes := make([]int8, paddedDim(x.dim))
	inv, _ := invNorm(v)
	hi, lo := make([]byte, x.stride), make([]byte, x.stride)
	encode(hi, lo, v, inv, codes)
	return rotatedSigns(x.rot, nil, codes)
}

// TestScanBySignsFindsWhatTheFullScanFinds: the sign pass returns the same
// best candidates as reading every vector's high digits, on clustered data
// (where it reads a small share), on uniform data (where it gives up and
// reads everything), under filters, in grouped indexes that widen their
// first pass, and after removals moved vectors (and their signs) around.
func TestScanBySignsFindsWhatTheFullScanFinds(t *testing.T) {
	n := 30000
	if testing.Short() || raceEnabled {
		n = 8000
	}
	defer func(m int) { signsMin = m }(signsMin)
	signsMin = 1000
	for _, tc := range []struct {
		name string
		d    *dataset
	}{
		{"clustered", clustered(benchDim, 8, n/1000, 0.5)},
		{"uniform", uniform(benchDim, 9)},
		{"grouped", func() *dataset { d := clustered(benchDim, 10, n/1000, 0.5); d.per = 7; return d }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			x, _ := build(d, n, d.fetch, nil, 10)
			var gone []int64
			for i := 0; i < n; i += 7 {
				gone = append(gone, int64(i))
			}
			filters := []*recall.Filter{nil, {SourcePrefix: "vault/1"}, {Since: "2024-07"}}
			check := func(stage string) {
				for qi := range 20 {
					u, _ := unit(d.query(qi))
					qc := make([]int16, 2*x.stride)
					qscale := encodeQuery(qc, u, queryBound(x.dim))
					sq := x.newScanQuery(qc, qscale)
					qs := x.querySigns(qc)
					for _, f := range filters {
						var allowed []uint64
						if f != nil {
							allowed = x.allowed(f.Allows)
						}
						for _, first := range []int{10, 512, 2048} {
							got, read := x.scanBySigns(&sq, qs, allowed, first)
							want := x.scanParallel(&sq, allowed, first).sorted()
							if !slices.Equal(got.sorted(), want) {
								t.Fatalf("%s, query %d, filter %+v, first %d: the sign pass found %d candidates differing from the full scan's %d", stage, qi, f, first, len(got), len(want))
							}
							// The point of it: on clustered data it reads
							// little more than the query's cluster, on
							// uniform data everything.
							if f == nil && first <= 512 {
								if tc.name == "uniform" && read < x.Vectors() {
									t.Fatalf("%s, query %d, first %d: read %d of %d vectors' high digits on uniform data, where no bound holds", stage, qi, first, read, x.Vectors())
								}
								// About the query's cluster of 1,000.
								if tc.name != "uniform" && read > 2000 {
									t.Fatalf("%s, query %d, first %d: read %d of %d vectors' high digits on clustered data", stage, qi, first, read, x.Vectors())
								}
							}
						}
					}
				}
			}
			check("built")
			x.Remove(gone...)
			checkInvariants(t, x)
			check("after removals")
		})
	}
}
