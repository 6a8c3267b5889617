package kernel

// Function variables so tests can force the portable path.
var (
	dot     = dotGeneric
	axpy    = axpyGeneric
	gelu    = geluGeneric
	matMulT = matMulTGeneric
)
