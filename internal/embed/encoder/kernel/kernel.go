// Package kernel holds the float32 kernels of the built-in encoder: matrix
// multiplication in the PyTorch nn.Linear weight layout, vector primitives,
// and the activation and normalisation steps of a BERT layer.
//
// Every kernel has a portable Go version; on amd64 CPUs with AVX2 and FMA
// (and AVX-512 for the matrix products) the hot paths run Go assembly
// chosen once at start-up through golang.org/x/sys/cpu. The purego build
// tag keeps to the portable code. Slices must be at least as long as the
// shapes passed; kernels panic otherwise, like an index error.
package kernel

// MatMulT computes dst[i*n+j] = bias[j] + sum_p a[i*k+p]*b[j*k+p], where a is
// m×k row-major, b is n×k row-major (nn.Linear's out_features×in_features),
// and dst is m×n. bias may be nil. Large products use all cores.
func MatMulT(dst, a, b, bias []float32, m, k, n int) {
	matMul(product{dst: dst, a: a, b: b, bias: bias, m: m, k: k, n: n, lda: k, ldb: k, ldc: n, bT: true})
}

// MatMulTStrided is MatMulT on matrices whose rows lie apart: row i of a
// starts at a[i*lda], row j of b at b[j*ldb], row i of dst at dst[i*ldc].
// Attention uses it to read one head's queries and keys straight out of
// the fused query/key/value rows and to write its output in place.
func MatMulTStrided(dst, a, b, bias []float32, m, k, n, lda, ldb, ldc int) {
	matMul(product{dst: dst, a: a, b: b, bias: bias, m: m, k: k, n: n, lda: lda, ldb: ldb, ldc: ldc, bT: true})
}

// MatMulStrided computes dst = a·b + bias with b laid out k×n: dst[i*ldc+j] =
// bias[j] + sum_p a[i*lda+p]*b[p*ldb+j]. Attention uses it to multiply the
// probabilities by the values without transposing them first.
func MatMulStrided(dst, a, b, bias []float32, m, k, n, lda, ldb, ldc int) {
	matMul(product{dst: dst, a: a, b: b, bias: bias, m: m, k: k, n: n, lda: lda, ldb: ldb, ldc: ldc})
}

// product is dst = a·b + bias (or a·bᵀ when bT) on strided row-major matrices.
type product struct {
	dst, a, b, bias []float32
	m, k, n         int
	lda, ldb, ldc   int
	bT              bool // b is n×k, rows of length k; otherwise k×n
}

func matMul(pr product) {
	m, k, n := pr.m, pr.k, pr.n
	if m < 0 || k < 0 || n < 0 {
		panic("kernel: negative matrix dimension")
	}
	if m == 0 || n == 0 {
		return
	}
	bRows, bCols := k, n
	if pr.bT {
		bRows, bCols = n, k
	}
	if pr.lda < k || pr.ldb < bCols || pr.ldc < n {
		panic("kernel: leading dimension shorter than a row")
	}
	checkLen("dst", pr.dst, (m-1)*pr.ldc+n)
	if k > 0 {
		checkLen("a", pr.a, (m-1)*pr.lda+k)
		checkLen("b", pr.b, (bRows-1)*pr.ldb+bCols)
	}
	if pr.bias != nil {
		checkLen("bias", pr.bias, n)
	}
	matMulImpl(pr)
}

// Dot returns sum_i a[i]*b[i] over len(a); b must be at least as long.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	return dot(a, b)
}

// Axpy computes y += alpha*x over len(x); y must be at least as long.
func Axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	axpy(alpha, x, y)
}

// Add computes dst += x over len(dst); x must be at least as long.
func Add(dst, x []float32) {
	add(dst, x[:len(dst)])
}

// Scale multiplies every element of x by s.
func Scale(x []float32, s float32) {
	scale(x, s)
}

// GELU applies the exact (erf-based) GELU in place, as BERT's "gelu"
// activation does: x * 0.5 * (1 + erf(x/sqrt(2))). erf is a rational
// approximation: the result is within 1.3e-6 of the float64 value for every
// input. Relative error reaches 3e-5 in the negative tail (|GELU| ~ 0.01),
// where 1+erf cancels, as in any float32 erf-based GELU.
func GELU(x []float32) {
	gelu(x)
}

// LayerNorm normalises each of the rows of x (rows×cols, row-major) in place
// to zero mean and unit variance, then applies gamma and beta per column.
func LayerNorm(x, gamma, beta []float32, rows, cols int, eps float32) {
	if rows == 0 || cols == 0 {
		return
	}
	checkLen("x", x, rows*cols)
	checkLen("gamma", gamma, cols)
	checkLen("beta", beta, cols)
	for r := 0; r < rows; r++ {
		layerNormRow(x[r*cols:(r+1)*cols], gamma[:cols], beta[:cols], eps)
	}
}

// SoftmaxRows replaces each row of x (rows×cols, row-major) by its softmax,
// subtracting the row maximum first so large logits cannot overflow.
func SoftmaxRows(x []float32, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	checkLen("x", x, rows*cols)
	for r := 0; r < rows; r++ {
		softmaxRow(x[r*cols : (r+1)*cols])
	}
}

func checkLen(name string, s []float32, want int) {
	if len(s) < want {
		panic("kernel: " + name + " too short")
	}
}
