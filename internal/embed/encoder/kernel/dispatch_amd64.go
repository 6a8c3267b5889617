//go:build !purego

package kernel

import (
	"math"

	"golang.org/x/sys/cpu"
)

// The vector routines (all but the matrix kernels) process the largest
// multiple of 8 elements of n; the wrappers below finish the tail in Go.

//go:noescape
func gemm6x16AVX2(kc int, a *float32, lda int, b *float32, c *float32, ldc int, bias *float32, acc int)

//go:noescape
func gemm12x32AVX512(kc int, a *float32, lda int, b *float32, c *float32, ldc int, bias *float32, acc int)

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, n int)

//go:noescape
func addAVX2(dst, x *float32, n int)

//go:noescape
func scaleAVX2(x *float32, n int, s float32)

//go:noescape
func geluAVX2(x *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func expSubSumAVX2(x *float32, n int, max float32) float32

//go:noescape
func sumAVX2(x *float32, n int) float32

//go:noescape
func sumSqDevAVX2(x *float32, n int, mean float32) float32

//go:noescape
func normAVX2(x, gamma, beta *float32, n int, mean, inv float32)

// Kernels for this CPU. x/sys/cpu also checks that the OS saves the vector
// registers the kernels use.
var (
	hasAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F
)

var (
	gemmAVX2   = gemmKernel{fn: gemm6x16AVX2, mr: 6, nr: 16, kc: 256}
	gemmAVX512 = gemmKernel{fn: gemm12x32AVX512, mr: 12, nr: 32, kc: 128}
)

func init() {
	if hasAVX2 {
		useAVX2()
	}
	if hasAVX512 {
		matMulImpl = matMulAVX512
	}
}

func useAVX2() {
	dot, axpy, add, scale = dotAVX2Go, axpyAVX2Go, addAVX2Go, scaleAVX2Go
	gelu, layerNormRow, softmaxRow = geluAVX2Go, layerNormRowAVX2, softmaxRowAVX2
	matMulImpl = matMulAVX2
}

func matMulAVX2(pr product) {
	if pr.bT && pr.m <= smallM {
		matMulSmallM(pr)
		return
	}
	matMulPacked(gemmAVX2, pr)
}

func matMulAVX512(pr product) {
	if pr.bT && pr.m <= smallM {
		matMulSmallM(pr)
		return
	}
	matMulPacked(gemmAVX512, pr)
}

func dotAVX2Go(a, b []float32) float32 {
	n := len(a) &^ 7
	var s float32
	if n > 0 {
		s = dotAVX2(&a[0], &b[0], n)
	}
	return s + dotGeneric(a[n:], b[n:])
}

func axpyAVX2Go(alpha float32, x, y []float32) {
	n := len(x) &^ 7
	if n > 0 {
		axpyAVX2(alpha, &x[0], &y[0], n)
	}
	axpyGeneric(alpha, x[n:], y[n:])
}

func addAVX2Go(dst, x []float32) {
	n := len(dst) &^ 7
	if n > 0 {
		addAVX2(&dst[0], &x[0], n)
	}
	addGeneric(dst[n:], x[n:])
}

func scaleAVX2Go(x []float32, s float32) {
	n := len(x) &^ 7
	if n > 0 {
		scaleAVX2(&x[0], n, s)
	}
	scaleGeneric(x[n:], s)
}

func geluAVX2Go(x []float32) {
	n := len(x) &^ 7
	if n > 0 {
		geluAVX2(&x[0], n)
	}
	geluGeneric(x[n:])
}

func layerNormRowAVX2(row, gamma, beta []float32, eps float32) {
	n := len(row) &^ 7
	if n == 0 {
		layerNormRowGeneric(row, gamma, beta, eps)
		return
	}
	sum := sumAVX2(&row[0], n)
	for _, v := range row[n:] {
		sum += v
	}
	mean := sum / float32(len(row))
	// Squared deviations from the mean (a second pass) rather than
	// E[x²]-E[x]², which cancels badly in float32 when the mean is large.
	ss := sumSqDevAVX2(&row[0], n, mean)
	for _, v := range row[n:] {
		ss += (v - mean) * (v - mean)
	}
	inv := float32(1 / math.Sqrt(float64(ss/float32(len(row))+eps)))
	normAVX2(&row[0], &gamma[0], &beta[0], n, mean, inv)
	for i := n; i < len(row); i++ {
		row[i] = (row[i]-mean)*inv*gamma[i] + beta[i]
	}
}

func softmaxRowAVX2(row []float32) {
	n := len(row) &^ 7
	if n == 0 {
		softmaxRowGeneric(row)
		return
	}
	max := maxAVX2(&row[0], n)
	for _, v := range row[n:] {
		if v > max {
			max = v
		}
	}
	sum := expSubSumAVX2(&row[0], n, max)
	for i := n; i < len(row); i++ {
		e := exp32(row[i] - max)
		row[i] = e
		sum += e
	}
	scaleAVX2Go(row, 1/sum)
}
