//go:build !purego

package kernel

func archImpls() []impl {
	var out []impl
	if hasAVX2 {
		saved, savedGemm := current(), gemm
		useAVX2()
		avx2 := current()
		saved.install()
		gemm = savedGemm
		out = append(out, useSet("avx2", avx2, gemmAVX2))
		if hasAVX512 {
			out = append(out, useSet("avx512", avx2, gemmAVX512))
		}
	}
	return out
}
