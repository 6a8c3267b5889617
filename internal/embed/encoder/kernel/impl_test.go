package kernel

import "testing"

// impl names one set of kernels; use swaps it in and returns the undo.
type impl struct {
	name string
	use  func() (restore func())
}

type kernelSet struct {
	dot          func(a, b []float32) float32
	axpy         func(alpha float32, x, y []float32)
	add          func(dst, x []float32)
	scale        func(x []float32, s float32)
	gelu         func(x []float32)
	layerNormRow func(row, gamma, beta []float32, eps float32)
	softmaxRow   func(row []float32)
	matMul       func(product)
}

func current() kernelSet {
	return kernelSet{dot, axpy, add, scale, gelu, layerNormRow, softmaxRow, matMulImpl}
}

func (s kernelSet) install() {
	dot, axpy, add, scale = s.dot, s.axpy, s.add, s.scale
	gelu, layerNormRow, softmaxRow, matMulImpl = s.gelu, s.layerNormRow, s.softmaxRow, s.matMul
}

var generic = kernelSet{
	dotGeneric, axpyGeneric, addGeneric, scaleGeneric,
	geluGeneric, layerNormRowGeneric, softmaxRowGeneric, matMulGeneric,
}

// impls lists the portable kernels and every accelerated set this CPU can
// run, so each test and benchmark covers all the paths.
func impls() []impl {
	return append([]impl{useSet("generic", generic)}, archImpls()...)
}

// useSet returns an impl that installs s.
func useSet(name string, s kernelSet) impl {
	return impl{name, func() func() {
		saved := current()
		s.install()
		return saved.install
	}}
}

// forEachImpl runs f once per kernel set as a subtest.
func forEachImpl(t *testing.T, f func(t *testing.T)) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) {
			defer im.use()()
			f(t)
		})
	}
}
