//go:build !purego

package kernel

// archImpls lists the AVX2 and AVX-512 sets this CPU can run, each also
// with the few-rows path of MatMulT turned off so the packed path is tested
// on every shape.
func archImpls() []impl {
	if !hasAVX2 {
		return nil
	}
	saved := current()
	useAVX2()
	avx2 := current()
	saved.install()
	sets := []struct {
		name string
		set  kernelSet
	}{{"avx2", avx2}}
	if hasAVX512 {
		avx512 := avx2
		avx512.matMul = matMulAVX512
		sets = append(sets, struct {
			name string
			set  kernelSet
		}{"avx512", avx512})
	}
	var out []impl
	for _, s := range sets {
		out = append(out, useSet(s.name, s.set))
		packed := useSet(s.name+"-packed", s.set)
		out = append(out, impl{packed.name, func() func() {
			restore, savedSmall := packed.use(), smallM
			smallM = 0
			return func() {
				smallM = savedSmall
				restore()
			}
		}})
	}
	return out
}
