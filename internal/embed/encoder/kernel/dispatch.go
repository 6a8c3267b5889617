package kernel

// The kernels behind the exported API. They start as the portable versions;
// init in dispatch_amd64.go swaps in assembly when the CPU supports it, and
// tests swap the portable ones back to cover both paths.
var (
	dot          = dotGeneric
	axpy         = axpyGeneric
	add          = addGeneric
	scale        = scaleGeneric
	gelu         = geluGeneric
	layerNormRow = layerNormRowGeneric
	softmaxRow   = softmaxRowGeneric
	matMulImpl   = matMulGeneric
)
