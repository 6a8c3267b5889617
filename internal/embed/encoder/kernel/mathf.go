package kernel

import "math"

// Scalar float32 versions of the approximations in vec_amd64.s, so the
// portable path is fast too (math.Erf costs tens of nanoseconds, far more
// than the matrix products around GELU) and both paths round alike.

// erf32 is Eigen's rational approximation z·P(z²)/Q(z²) on [-4, 4]:
// absolute error below 5e-7 against math.Erf.
func erf32(z float32) float32 {
	// Comparisons rather than min/max: the builtins' NaN and signed-zero
	// handling costs more than the polynomial here.
	if z > 4 {
		z = 4
	} else if z < -4 {
		z = -4
	}
	z2 := z * z
	p := float32(-2.72614225801306e-10)
	p = p*z2 + 2.77068142495902e-08
	p = p*z2 - 2.10102402082508e-06
	p = p*z2 - 5.69250639462346e-05
	p = p*z2 - 7.34990630326855e-04
	p = p*z2 - 2.95459980854025e-03
	p = p*z2 - 1.60960333262415e-02
	q := float32(-1.45660718464996e-05)
	q = q*z2 - 2.13374055278905e-04
	q = q*z2 - 1.68282697438203e-03
	q = q*z2 - 7.37332916720468e-03
	q = q*z2 - 1.42647390514189e-02
	return z * p / q
}

// exp32 is Cephes' expf: x = n·ln2 + r with |r| ≤ ln2/2, exp(r) by a
// degree-6 polynomial, 2^n put straight into the exponent bits. Inputs are
// clamped so 2^n stays normal; results are within 2 ulp of exp.
func exp32(x float32) float32 {
	if x > 88 {
		x = 88
	} else if x < -87.33654 {
		x = -87.33654
	}
	n := float32(math.Floor(float64(x*1.44269504088896341) + 0.5))
	r := x - n*0.693359375 - n*-2.12194440e-4
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}
