//go:build !purego

package kernel

// smallM is the most rows of a for which MatMulT skips packing b and takes
// dot products straight from its rows. Packing b costs the same whatever
// the rows: on a 16×384 by 1536×384 product it holds the packed path to 38
// GFLOP per CPU-second against about 45-50 without it; from about 32 rows
// packing pays. A variable so tests can cover the packed path with few rows.
var smallM = 24

//go:noescape
func dot3x4AVX2(k int, a *float32, lda int, b *float32, ldb int, out *[12]float32)

// matMulSmallM computes a·bᵀ for few rows of a, four columns at a time: the
// four rows of b stay in L1 while every row of a passes over them, so b is
// read from memory once.
func matMulSmallM(pr product) {
	m, k, n := pr.m, pr.k, pr.n
	const block = 64 // columns per parallel unit
	blocks := (n + block - 1) / block
	w := workers()
	if m*n*k < parallelMin {
		w = 1
	}
	k8 := k &^ 7
	parallelFor(min(w, blocks), blocks, func(blk int) {
		var out [12]float32
		j1 := min(n, (blk+1)*block)
		for j := blk * block; j < j1; j += 4 {
			if j+4 > j1 {
				for ; j < j1; j++ {
					for i := 0; i < m; i++ {
						pr.dst[i*pr.ldc+j] = dotAVX2Go(pr.a[i*pr.lda:i*pr.lda+k], pr.b[j*pr.ldb:j*pr.ldb+k]) + biasAt(pr.bias, j)
					}
				}
				break
			}
			i := 0
			for ; i+3 <= m; i += 3 {
				if k8 > 0 {
					dot3x4AVX2(k8, &pr.a[i*pr.lda], pr.lda, &pr.b[j*pr.ldb], pr.ldb, &out)
				}
				for r := 0; r < 3; r++ {
					ar := pr.a[(i+r)*pr.lda : (i+r)*pr.lda+k]
					for c := 0; c < 4; c++ {
						var s float32
						if k8 > 0 {
							s = out[r*4+c]
						}
						br := pr.b[(j+c)*pr.ldb : (j+c)*pr.ldb+k]
						for p := k8; p < k; p++ {
							s += ar[p] * br[p]
						}
						pr.dst[(i+r)*pr.ldc+j+c] = s + biasAt(pr.bias, j+c)
					}
				}
			}
			for ; i < m; i++ {
				ar := pr.a[i*pr.lda : i*pr.lda+k]
				for c := 0; c < 4; c++ {
					pr.dst[i*pr.ldc+j+c] = dotAVX2Go(ar, pr.b[(j+c)*pr.ldb:(j+c)*pr.ldb+k]) + biasAt(pr.bias, j+c)
				}
			}
		}
	})
}

func biasAt(bias []float32, j int) float32 {
	if bias == nil {
		return 0
	}
	return bias[j]
}
