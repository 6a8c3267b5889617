//go:build !purego

package kernel

func archImpls() []impl {
	var out []impl
	if hasAVX2 {
		saved := current()
		useAVX2()
		avx2 := current()
		saved.install()
		out = append(out, useSet("avx2", avx2))
		if hasAVX512 {
			avx512 := avx2
			avx512.matMul = matMulAVX512
			out = append(out, useSet("avx512", avx512))
		}
	}
	return out
}
