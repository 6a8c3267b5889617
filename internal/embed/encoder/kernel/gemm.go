//go:build amd64 && !purego

package kernel

import "sync"

// The packed product follows the BLIS loop nest. b is repacked once per call
// into panels of nr columns, each stored p-major (nr contiguous values per
// step of the inner dimension), so the micro-kernel reads it with plain
// vector loads; a is read in place, because its rows are already contiguous
// along k and broadcasting one value per row needs no layout change.
//
// Blocking: a packed panel of kc×nr floats (16 KiB) stays in L1 while the
// micro-kernel sweeps the rows of one row block (up to mcMax rows, ~100 KiB of
// a, in L2). Row blocks are the unit of parallel work.
const (
	mrMax = 12 // largest micro-tile of any kernel, for the edge buffers
	nrMax = 32
	kcMax = 256
	mcMax = 120 // rows per parallel work unit; a multiple of every kernel's mr
	ncMax = 256 // columns per pass over the k blocks
)

// microKernel computes one mr×nr tile of c (leading dimension ldc):
//
//	c[r][j] = init[r][j] + sum_{p<kc} a[r*lda+p] * b[p*nr+j]
//
// where b is a packed panel and init is c itself when acc != 0, otherwise
// bias[j] (zero when bias is nil).
type microKernel func(kc int, a *float32, lda int, b *float32, c *float32, ldc int, bias *float32, acc int)

// gemmKernel describes a micro-kernel: its tile and the inner-dimension
// block that keeps one packed panel (kc×nr floats) near 16 KiB, half of L1.
type gemmKernel struct {
	fn         microKernel
	mr, nr, kc int
}

var packPool = sync.Pool{New: func() any { return new([]float32) }}

func matMulPacked(g gemmKernel, pr product) {
	m, k, n := pr.m, pr.k, pr.n
	if k == 0 {
		fillBias(pr)
		return
	}
	mr, nr := g.mr, g.nr
	np := (n + nr - 1) / nr
	nkb := (k + g.kc - 1) / g.kc
	kc := (k + nkb - 1) / nkb // equal blocks: 384 splits 192+192, not 256+128

	bufp := packPool.Get().(*[]float32)
	defer packPool.Put(bufp)
	if cap(*bufp) < np*nr*k {
		*bufp = make([]float32, np*nr*k)
	}
	packed := (*bufp)[:np*nr*k]

	w := workers()
	if m*n*k < parallelMin {
		w = 1
	}
	// Pack in parallel too: for short a (a query, one attention head) packing
	// is a large share of the work.
	parallelFor(min(w, np), np, func(q int) {
		for kb := 0; kb < nkb; kb++ {
			p0 := kb * kc
			kcb := min(kc, k-p0)
			dst := packed[kb*kc*np*nr+q*kcb*nr:]
			if pr.bT {
				packPanelT(dst, pr.b, pr.ldb, n, q*nr, nr, p0, kcb)
			} else {
				packPanelN(dst, pr.b, pr.ldb, n, q*nr, nr, p0, kcb)
			}
		}
	})

	mc := mcMax
	if m < w*mcMax {
		mc = max(mr, roundUp((m+w-1)/w, mr))
	}
	rowBlocks := (m + mc - 1) / mc
	colChunks := 1
	if rowBlocks < w {
		colChunks = min(np, (w+rowBlocks-1)/rowBlocks)
	}
	qPer := (np + colChunks - 1) / colChunks
	units := rowBlocks * colChunks

	parallelFor(min(w, units), units, func(u int) {
		i0 := (u / colChunks) * mc
		q0 := (u % colChunks) * qPer
		t := tilePool.Get().(*tile)
		defer tilePool.Put(t)
		t.product, t.g, t.packed, t.np, t.kc = pr, g, packed, np, kc
		t.i0, t.i1, t.q0, t.q1 = i0, min(m, i0+mc), q0, min(np, q0+qPer)
		t.run()
		t.product, t.packed = product{}, nil // let the caller's slices go
	})
}

// tilePool recycles work units: each carries 14 KiB of edge buffers.
var tilePool = sync.Pool{New: func() any { return new(tile) }}

type tile struct {
	product
	g              gemmKernel
	packed         []float32
	np, kc         int
	i0, i1, q0, q1 int
	aEdge          [mrMax * kcMax]float32
	cEdge          [mrMax * nrMax]float32
	bEdge          [nrMax]float32
}

func (t *tile) run() {
	m, k, mr, nr := t.m, t.k, t.g.mr, t.g.nr
	nkb := (k + t.kc - 1) / t.kc
	edgeRows := t.i1 == m && m%mr != 0
	lastI := t.i1 - (t.i1-t.i0)%mr // first row of a partial row group
	if !edgeRows {
		lastI = t.i1
	}
	// Columns go in chunks of about ncMax so the slice of dst that every
	// k block revisits (mcMax×ncMax floats) stays in L2 between them.
	qStep := max(1, ncMax/nr)
	for qc := t.q0; qc < t.q1; qc += qStep {
		t.runColumns(qc, min(t.q1, qc+qStep), nkb, edgeRows, lastI)
	}
}

func (t *tile) runColumns(qa, qb, nkb int, edgeRows bool, lastI int) {
	m, k, n, lda, ldc := t.m, t.k, t.n, t.lda, t.ldc
	mr, nr, kern := t.g.mr, t.g.nr, t.g.fn
	for kb := 0; kb < nkb; kb++ {
		p0 := kb * t.kc
		kcb := min(t.kc, k-p0)
		acc := min(kb, 1)
		blk := t.packed[kb*t.kc*t.np*nr:]
		if edgeRows {
			// The partial row group is copied into a zero-padded mr-row block
			// so the kernel never reads past the end of a.
			clear(t.aEdge[:mr*kcb])
			for r := 0; lastI+r < m; r++ {
				copy(t.aEdge[r*kcb:(r+1)*kcb], t.a[(lastI+r)*lda+p0:])
			}
		}
		for q := qa; q < qb; q++ {
			bp := &blk[q*kcb*nr]
			j0 := q * nr
			cols := min(nr, n-j0)
			var biasp *float32
			if t.bias != nil && acc == 0 {
				if cols == nr {
					biasp = &t.bias[j0]
				} else {
					clear(t.bEdge[:])
					copy(t.bEdge[:], t.bias[j0:n])
					biasp = &t.bEdge[0]
				}
			}
			i := t.i0
			if cols == nr {
				for ; i < lastI; i += mr {
					kern(kcb, &t.a[i*lda+p0], lda, bp, &t.dst[i*ldc+j0], ldc, biasp, acc)
				}
			}
			for ; i < t.i1; i += mr {
				rows := min(mr, m-i)
				ap, ld := &t.aEdge[0], kcb
				if rows == mr {
					ap, ld = &t.a[i*lda+p0], lda
				}
				if acc != 0 {
					for r := 0; r < rows; r++ {
						copy(t.cEdge[r*nr:r*nr+cols], t.dst[(i+r)*ldc+j0:])
					}
				}
				kern(kcb, ap, ld, bp, &t.cEdge[0], nr, biasp, acc)
				for r := 0; r < rows; r++ {
					copy(t.dst[(i+r)*ldc+j0:(i+r)*ldc+j0+cols], t.cEdge[r*nr:])
				}
			}
		}
	}
}

//go:noescape
func packT8AVX2(dst *float32, b *float32, ldb int, kc int, nr int)

// packPanelT packs columns j0..j0+nr of the product from b laid out n×k
// (row j at b[j*ldb]), inner indices p0..p0+kcb: kcb groups of nr values,
// zero past column n. Whole groups of 8 rows by 8 columns are transposed in
// registers (0.15 ns per value against 0.7 for the scalar loop); the rest
// goes the scalar way.
func packPanelT(dst, b []float32, ldb, n, j0, nr, p0, kcb int) {
	dst = dst[:kcb*nr]
	k8 := kcb &^ 7
	rows := max(0, min(nr, n-j0)) // rows of b in this panel; the rest is padding
	done := 0                     // rows whose first k8 columns went through packT8AVX2
	if k8 > 0 {
		done = rows &^ 7
	}
	for jj := 0; jj < done; jj += 8 {
		// The last of the 8 rows is the furthest read; index it so a short
		// b panics here rather than in assembly.
		_ = b[(j0+jj+7)*ldb+p0+k8-1]
		packT8AVX2(&dst[jj], &b[(j0+jj)*ldb+p0], ldb, k8, nr)
	}
	for jj := 0; jj < nr; jj++ {
		p := 0
		if jj < done {
			p = k8
		}
		if jj >= rows {
			for ; p < kcb; p++ {
				dst[p*nr+jj] = 0
			}
			continue
		}
		src := b[(j0+jj)*ldb+p0 : (j0+jj)*ldb+p0+kcb]
		for ; p < kcb; p++ {
			dst[p*nr+jj] = src[p]
		}
	}
}

// packPanelN packs the same block from b laid out k×n (row p at b[p*ldb]),
// where each group of nr values is a contiguous piece of one row.
func packPanelN(dst, b []float32, ldb, n, j0, nr, p0, kcb int) {
	dst = dst[:kcb*nr]
	cols := min(nr, n-j0)
	for p := 0; p < kcb; p++ {
		row := dst[p*nr : (p+1)*nr]
		copy(row, b[(p0+p)*ldb+j0:(p0+p)*ldb+j0+cols])
		clear(row[cols:])
	}
}

func fillBias(pr product) {
	for i := 0; i < pr.m; i++ {
		row := pr.dst[i*pr.ldc : i*pr.ldc+pr.n]
		if pr.bias == nil {
			clear(row)
		} else {
			copy(row, pr.bias[:pr.n])
		}
	}
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }
