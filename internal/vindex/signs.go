package vindex

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// A large index first ranks every vector by one bit a dimension: the signs
// of the vector after a fixed random rotation, compared with the query's
// (sign random projection, Charikar 2002). For two unit vectors at angle θ,
// each bit differs with probability θ/π, so the number of differing bits,
// h, estimates the angle. The scan then reads the high digits only of the
// vectors whose h could belong to one of the best, a small share of the
// slab on data that clusters as embeddings do. The count reads a quarter
// of the bytes the high digits take, with a popcount instead of a multiply.
//
// Nothing is left to the estimate's luck. Once the high digits of the
// vectors with the smallest h have been scored, the weakest score that
// still counts gives the angle θ any vector must be within to count; such
// a vector's h exceeds the mean bits·θ/π by more than signsZ standard
// deviations (binomial) with probability under 10⁻⁴. Every vector up to
// that bound is read; when the bound takes in a third of the allowed
// vectors (data with no clusters, where the best are barely better than
// the rest), the scan reads every allowed vector's high digits, as without
// signs.
//
// The rotation is x ↦ H·D₂·H·D₁·x over the codes padded to a power of
// two: each Dᵢ flips the sign of a fixed pseudo-random half of the
// components and H is the Walsh–Hadamard transform, so each bit is the
// sign of x against a pseudo-random direction, computed in integers in
// O(d log d). The first paddedDim of its outputs (rounded up to 64) are
// kept: 48 bytes for 384 dimensions.

// signsMin is the smallest index that ranks by signs first: below it the
// whole scan takes under a millisecond. (A variable so that tests can take
// small indexes through the sign pass.)
var signsMin = 64 * 1024

const (
	// signsZ is how many standard deviations above its expected count of
	// differing bits a vector's h may lie and still be read.
	signsZ = 4.0
	// signsSlack is how far in cosine a vector's high-digit score may lie
	// from its exact one (up to 7.5 steps of the dropped low digit a
	// component, about 0.01; twice that).
	signsSlack = 0.02
)

// rotation is the index's fixed random rotation, H·D₂·H·D₁.
type rotation struct {
	flip  [rounds][]int32 // Dᵢ: -1 for a component whose sign is flipped, else 0
	size  int             // H's order: a power of two ≥ the codes, at least 64
	shift uint            // bits dropped between rounds, so no sum overflows
	bits  int             // outputs kept: the codes rounded up to 64, at most size
	pool  sync.Pool       // *[]int32 scratch of size
}

// rounds of H·D: one leaves the bits of vectors whose length sits on a few
// coordinates (as some models' outlier dimensions do) more alike than
// independent hyperplanes would; two make them binomial
// (TestSignsEstimateTheAngle).
const rounds = 2

func newRotation(padded int) *rotation {
	rot := &rotation{size: 64, bits: (padded + 63) / 64 * 64}
	for rot.size < padded {
		rot.size *= 2
		rot.shift++
	}
	rot.shift = (rot.shift + 6) / 2
	// Fixed, so that the same vector always has the same signs.
	r := rand.New(rand.NewPCG(0x7265_6361_6c6c, uint64(padded)))
	for i := range rot.flip {
		rot.flip[i] = make([]int32, rot.size)
		for j := range rot.flip[i] {
			rot.flip[i][j] = -int32(r.IntN(2))
		}
	}
	return rot
}

// rotatedSigns appends the sign bits of the rotated v (at most size
// components, each within ±127; the rest are zero) to dst: bits/64 words.
//
// Each round's transform multiplies the largest magnitude by at most size;
// the first round's result is divided by 2^shift (about √size), so that a
// second keeps within int32 for any size up to 2¹⁶.
func rotatedSigns(rot *rotation, dst []uint64, v []int8) []uint64 {
	bp, _ := rot.pool.Get().(*[]int32)
	if bp == nil {
		b := make([]int32, rot.size)
		bp = &b
	}
	buf := *bp
	for i, c := range v {
		buf[i] = int32(c)
	}
	clear(buf[len(v):])
	flip(buf, rot.flip[0], 0)
	fwht(buf)
	for r := 1; r < rounds; r++ {
		flip(buf, rot.flip[r], rot.shift)
		fwht(buf)
	}
	n := len(dst)
	dst = slices.Grow(dst, rot.bits/64)[:n+rot.bits/64]
	positive(buf[:rot.bits], dst[n:])
	rot.pool.Put(bp)
	return dst
}

// querySigns is rotatedSigns of the query's codes, scaled to ±127 first.
func (x *Index) querySigns(qc []int16) []uint64 {
	var m int32
	for _, c := range qc {
		m = max(m, int32(c), -int32(c))
	}
	q8 := make([]int8, len(qc))
	for i, c := range qc {
		q8[i] = int8(int32(c) * 127 / max(m, 1))
	}
	return rotatedSigns(x.rot, nil, q8)
}

// hammingBound is the largest count of differing bits, out of n, that a
// vector whose cosine with the query is at least cos can be expected to
// have: its mean n·θ/π plus signsZ standard deviations.
func hammingBound(n int, cos float64) int {
	if cos <= -1 {
		return n
	}
	p := math.Acos(min(cos, 1)) / math.Pi
	return min(n, int(math.Ceil(float64(n)*p+signsZ*math.Sqrt(float64(n)*p*(1-p)))))
}

// distances writes every allowed vector's count of sign bits that differ
// from qs into hs (an unallowed one gets the sentinel len(qs)·64+1) and
// returns how many vectors have each count, split across cores.
func (x *Index) distances(qs []uint64, allowed []uint64, hs []uint16) []int {
	n := len(x.hashes)
	nb := x.words * 64
	workers := min(runtime.GOMAXPROCS(0), (n+minPerWorker-1)/minPerWorker)
	workers = max(workers, 1)
	hists := make([][]int, workers)
	var wg sync.WaitGroup
	per := ((n+block-1)/block + workers - 1) / workers * block
	for w := range workers {
		wg.Go(func() {
			hist := make([]int, nb+2)
			lo, hi := min(w*per, n), min((w+1)*per, n)
			x.distanceRange(qs, allowed, hs, hist, lo, hi)
			hists[w] = hist
		})
	}
	wg.Wait()
	for _, h := range hists[1:] {
		for i, c := range h {
			hists[0][i] += c
		}
	}
	return hists[0]
}

func (x *Index) distanceRange(qs, allowed []uint64, hs []uint16, hist []int, lo, hi int) {
	nw := x.words
	if allowed == nil {
		hamming(x.signs[lo*nw:hi*nw], qs, hs[lo:hi], hist)
		return
	}
	none := uint16(nw*64 + 1)
	// lo is a multiple of block: one word of allowed a block.
	for b := lo; b < hi; b += block {
		e := min(b+block, hi)
		mask := allowed[b/block]
		if mask == 0 {
			for i := b; i < e; i++ {
				hs[i] = none
			}
			hist[none] += e - b
			continue
		}
		hamming(x.signs[b*nw:e*nw], qs, hs[b:e], hist)
		for refused := ^mask; refused != 0; refused &= refused - 1 {
			i := b + bits.TrailingZeros64(refused)
			if i >= e {
				break
			}
			hist[hs[i]]--
			hist[none]++
			hs[i] = none
		}
	}
}

// hamming writes to hs[i] the number of bits in which row i of signs
// (len(qs) words each) differs from qs, and counts each number in hist. It
// is the first pass of a large index's every search, so it is implemented
// in assembly where the CPU has POPCNT (see kernel_amd64.go).
var hamming = hammingGeneric

func hammingGeneric(signs, qs []uint64, hs []uint16, hist []int) {
	nw := len(qs)
	for i := range hs {
		d := 0
		for j, w := range signs[nw*i : nw*i+nw] {
			d += bits.OnesCount64(w ^ qs[j])
		}
		hs[i] = uint16(d)
		hist[d]++
	}
}

// within returns a bitmap of the vectors whose count hs lies in (from, to].
func within(hs []uint16, from, to int) []uint64 {
	bm := make([]uint64, (len(hs)+block-1)/block)
	// Four counts a word: a lane's top bit of (count | 0x8000) − (to+1)
	// is clear where the count is at most to (counts are under 2¹⁵), and
	// most words hold none.
	const top = 0x8000_8000_8000_8000
	t := uint64(to+1) * 0x0001_0001_0001_0001
	v := 0
	for ; v+4 <= len(hs); v += 4 {
		w := uint64(hs[v]) | uint64(hs[v+1])<<16 | uint64(hs[v+2])<<32 | uint64(hs[v+3])<<48
		if ((w|top)-t)&top == top {
			continue
		}
		for i, h := range hs[v : v+4] {
			if int(h) > from && int(h) <= to {
				bm[(v+i)/block] |= 1 << ((v + i) % block)
			}
		}
	}
	for ; v < len(hs); v++ {
		if h := int(hs[v]); h > from && h <= to {
			bm[v/block] |= 1 << (v % block)
		}
	}
	return bm
}

// sampleEvery: one block in sampleEvery is where sampleDistances looks.
const sampleEvery = 16

// sampleDistances is distances over one block in sampleEvery, on one
// core; hs of the others is left as it was.
func (x *Index) sampleDistances(qs, allowed []uint64, hs []uint16) []int {
	hist := make([]int, x.words*64+2)
	n := len(x.hashes)
	for b := 0; b < n; b += sampleEvery * block {
		x.distanceRange(qs, allowed, hs, hist, b, min(b+block, n))
	}
	return hist
}

// hopeless reports whether the bound that the first-th nearest by signs
// in hist suggests would take in a third of the vectors hist counts as
// allowed.
func (x *Index) hopeless(hist []int, first int) bool {
	nb := x.words * 64
	reach, count := -1, 0
	for reach < nb && count < first {
		reach++
		count += hist[reach]
	}
	bound := hammingBound(nb, math.Cos(math.Pi*float64(reach)/float64(nb))-signsSlack)
	within := 0
	for _, c := range hist[:bound+1] {
		within += c
	}
	total := 0
	for _, c := range hist[:nb+1] {
		total += c
	}
	return 3*within > total
}

// scanBySigns is scan for a large index (see the top of this file): the
// best first vectors by high digits, as scan would find them, reading the
// high digits of the vectors whose signs put them near the query. It also
// returns how many vectors it read the high digits of.
func (x *Index) scanBySigns(sq *scanQuery, qs []uint64, allowed []uint64, first int) (heap, int) {
	n := len(x.hashes)
	nb := x.words * 64
	hp, _ := x.counts.Get().(*[]uint16)
	if hp == nil || cap(*hp) < n {
		b := make([]uint16, n)
		hp = &b
	}
	defer x.counts.Put(hp)
	hs := (*hp)[:n] // distances writes every count before within reads one
	// The first-th nearest by signs is about as near by its scores: if
	// the bound that nearness gives takes in a third of what is allowed,
	// the signs will not narrow the scan down (uniform data, a filter
	// that keeps the query's neighbours out), and reading everything at
	// once is cheaper than finding that out. In a large index a sixteenth
	// of the blocks tells, before the pass over every vector's signs.
	if n/sampleEvery >= 64*first {
		if hist := x.sampleDistances(qs, allowed, hs); x.hopeless(hist, (first+sampleEvery-1)/sampleEvery) {
			return x.scanParallel(sq, allowed, first), n - hist[nb+1]*sampleEvery
		}
	}
	hist := x.distances(qs, allowed, hs)
	total := n - hist[nb+1] // the allowed vectors
	if x.hopeless(hist, first) {
		return x.scanParallel(sq, allowed, first), total
	}
	// upTo counts the vectors within h of the query's signs.
	upTo := func(h int) (c int) {
		for _, k := range hist[:h+1] {
			c += k
		}
		return c
	}
	reach, count := -1, 0
	// Start with the 2·first nearest by signs.
	for reach < nb && count < 2*first {
		reach++
		count += hist[reach]
	}
	top := x.scanParallel(sq, within(hs, -1, reach), first)
	for {
		bound := nb
		if len(top) == first {
			bound = hammingBound(nb, float64(top[0].score*sq.cos)-signsSlack)
		}
		if bound <= reach {
			return top, count
		}
		more := upTo(bound) - count
		if 3*(count+more) > total {
			// Most of what is allowed could count: read it all.
			return x.scanParallel(sq, allowed, first), total
		}
		for _, c := range x.scanParallel(sq, within(hs, reach, bound), first) {
			top = top.push(c, first)
		}
		reach, count = bound, count+more
	}
}

// fwht is the Walsh–Hadamard transform of buf (a power of two, at least 8
// long) in place, unnormalised. The first three levels are done eight
// values at a time, where a loop per level would be mostly overhead.
func fwht(buf []int32) {
	for i := 0; i+8 <= len(buf); i += 8 {
		v := (*[8]int32)(buf[i : i+8])
		a0, a1 := v[0]+v[1], v[0]-v[1]
		a2, a3 := v[2]+v[3], v[2]-v[3]
		a4, a5 := v[4]+v[5], v[4]-v[5]
		a6, a7 := v[6]+v[7], v[6]-v[7]
		b0, b2 := a0+a2, a0-a2
		b1, b3 := a1+a3, a1-a3
		b4, b6 := a4+a6, a4-a6
		b5, b7 := a5+a7, a5-a7
		v[0], v[4] = b0+b4, b0-b4
		v[1], v[5] = b1+b5, b1-b5
		v[2], v[6] = b2+b6, b2-b6
		v[3], v[7] = b3+b7, b3-b7
	}
	fwhtWide(buf)
}

// fwhtWide does the levels of fwht whose butterflies span 8 values or
// more; buf is a power of two, at least 8 long. It is assembly where the
// CPU has AVX2 (see kernel_amd64.go).
var fwhtWide = fwhtWideGeneric

func fwhtWideGeneric(buf []int32) {
	for h := 8; h < len(buf); h *= 2 {
		for i := 0; i < len(buf); i += 2 * h {
			for j := i; j < i+h; j += 8 {
				a, b := (*[8]int32)(buf[j:j+8]), (*[8]int32)(buf[j+h:j+h+8])
				a[0], b[0] = a[0]+b[0], a[0]-b[0]
				a[1], b[1] = a[1]+b[1], a[1]-b[1]
				a[2], b[2] = a[2]+b[2], a[2]-b[2]
				a[3], b[3] = a[3]+b[3], a[3]-b[3]
				a[4], b[4] = a[4]+b[4], a[4]-b[4]
				a[5], b[5] = a[5]+b[5], a[5]-b[5]
				a[6], b[6] = a[6]+b[6], a[6]-b[6]
				a[7], b[7] = a[7]+b[7], a[7]-b[7]
			}
		}
	}
}

// flip sets buf[i] to buf[i] >> shift, its sign flipped where f[i] is -1
// (f is at least as long as buf, a multiple of 8 long): D of the
// rotation, and between rounds the division that keeps sums in range.
var flip = flipGeneric

func flipGeneric(buf, f []int32, shift uint) {
	f = f[:len(buf)]
	for i, c := range buf {
		c >>= shift
		buf[i] = (c ^ f[i]) - f[i]
	}
}

// positive sets bit i of dst[w] where buf[64·w + i] > 0.
var positive = positiveGeneric

func positiveGeneric(buf []int32, dst []uint64) {
	for w := range dst {
		var b uint64
		for i, c := range buf[64*w : 64*w+64] {
			b |= uint64(uint32(-c)>>31) << i // c > 0, without a branch
		}
		dst[w] = b
	}
}
