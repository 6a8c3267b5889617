//go:build !purego

#include "textflag.h"

// Each function here handles the largest multiple of 8 elements of its
// input; the Go wrappers finish the tail, so the loops need no masking.

#define CONST8(name, bits) \
	DATA name<>+0(SB)/4, bits \
	DATA name<>+4(SB)/4, bits \
	DATA name<>+8(SB)/4, bits \
	DATA name<>+12(SB)/4, bits \
	DATA name<>+16(SB)/4, bits \
	DATA name<>+20(SB)/4, bits \
	DATA name<>+24(SB)/4, bits \
	DATA name<>+28(SB)/4, bits \
	GLOBL name<>(SB), RODATA|NOPTR, $32

// erf(z) ≈ z·P(z²)/Q(z²) on [-4, 4] (Eigen's generic_fast_erf_float);
// beyond ±4 erf is ±1 in float32.
CONST8(erfA1, $0xbc83dbd4)
CONST8(erfA3, $0xbb41a1f6)
CONST8(erfA5, $0xba40ac63)
CONST8(erfA7, $0xb86ec2d2)
CONST8(erfA9, $0xb60cff51)
CONST8(erfA11, $0x32edffee)
CONST8(erfA13, $0xaf95df0b)
CONST8(erfB0, $0xbc69b6a7)
CONST8(erfB2, $0xbbf19bf8)
CONST8(erfB4, $0xbadc924e)
CONST8(erfB6, $0xb95fbd29)
CONST8(erfB8, $0xb77460cd)
CONST8(invSqrt2, $0x3f3504f3)
CONST8(four, $0x40800000)
CONST8(minusFour, $0xc0800000)
CONST8(half, $0x3f000000)

// exp(x) = 2^n·exp(r), n = round(x·log2 e), r = x - n·ln 2 in two parts
// (Cody-Waite), exp(r) by Cephes' expf polynomial. Inputs are clamped so
// 2^n stays a normal float: below -87.3 the result is ~1e-38, not 0.
CONST8(log2e, $0x3fb8aa3b)
CONST8(ln2Hi, $0x3f318000)
CONST8(ln2Lo, $0xb95e8083)
CONST8(expP0, $0x39506967)
CONST8(expP1, $0x3ab743ce)
CONST8(expP2, $0x3c088908)
CONST8(expP3, $0x3d2aa9c1)
CONST8(expP4, $0x3e2aaaaa)
CONST8(expP5, $0x3f000000)
CONST8(one, $0x3f800000)
CONST8(expMin, $0xc2aeac4f)
CONST8(expMax, $0x42b00000)
CONST8(bias127, $0x0000007f)

// Y0 = exp(Y0); clobbers Y1-Y3.
#define EXP8 \
	VMINPS expMax<>(SB), Y0, Y0 \
	VMAXPS expMin<>(SB), Y0, Y0 \
	VMULPS log2e<>(SB), Y0, Y1 \
	VROUNDPS $0, Y1, Y1 \
	VCVTPS2DQ Y1, Y2 \
	VFNMADD231PS ln2Hi<>(SB), Y1, Y0 \
	VFNMADD231PS ln2Lo<>(SB), Y1, Y0 \
	VMOVUPS expP0<>(SB), Y1 \
	VFMADD213PS expP1<>(SB), Y0, Y1 \
	VFMADD213PS expP2<>(SB), Y0, Y1 \
	VFMADD213PS expP3<>(SB), Y0, Y1 \
	VFMADD213PS expP4<>(SB), Y0, Y1 \
	VFMADD213PS expP5<>(SB), Y0, Y1 \
	VMULPS Y0, Y0, Y3 \
	VFMADD213PS Y0, Y3, Y1 \
	VADDPS one<>(SB), Y1, Y1 \
	VPADDD bias127<>(SB), Y2, Y2 \
	VPSLLD $23, Y2, Y2 \
	VMULPS Y2, Y1, Y0

// X0 = sum of the 8 lanes of Y0; clobbers X1.
#define HSUM \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VPERMILPS $0x4e, X0, X1 \
	VADDPS X1, X0, X0 \
	VPERMILPS $0xb1, X0, X1 \
	VADDSS X1, X0, X0

// func dotAVX2(a, b *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ CX, DX
	SHRQ $5, DX
	JZ dot8

dot32:
	VMOVUPS (AX), Y4
	VMOVUPS 32(AX), Y5
	VMOVUPS 64(AX), Y6
	VMOVUPS 96(AX), Y7
	VFMADD231PS (BX), Y4, Y0
	VFMADD231PS 32(BX), Y5, Y1
	VFMADD231PS 64(BX), Y6, Y2
	VFMADD231PS 96(BX), Y7, Y3
	ADDQ $128, AX
	ADDQ $128, BX
	DECQ DX
	JNZ dot32

dot8:
	ANDQ $31, CX
	SHRQ $3, CX
	JZ dotdone

dot8loop:
	VMOVUPS (AX), Y4
	VFMADD231PS (BX), Y4, Y0
	ADDQ $32, AX
	ADDQ $32, BX
	DECQ CX
	JNZ dot8loop

dotdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	MOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyAVX2(alpha float32, x, y *float32, n int)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ x+8(FP), AX
	MOVQ y+16(FP), BX
	MOVQ n+24(FP), CX
	MOVQ CX, DX
	SHRQ $5, DX
	JZ axpy8

axpy32:
	VMOVUPS (BX), Y1
	VMOVUPS 32(BX), Y2
	VMOVUPS 64(BX), Y3
	VMOVUPS 96(BX), Y4
	VFMADD231PS (AX), Y0, Y1
	VFMADD231PS 32(AX), Y0, Y2
	VFMADD231PS 64(AX), Y0, Y3
	VFMADD231PS 96(AX), Y0, Y4
	VMOVUPS Y1, (BX)
	VMOVUPS Y2, 32(BX)
	VMOVUPS Y3, 64(BX)
	VMOVUPS Y4, 96(BX)
	ADDQ $128, AX
	ADDQ $128, BX
	DECQ DX
	JNZ axpy32

axpy8:
	ANDQ $31, CX
	SHRQ $3, CX
	JZ axpydone

axpy8loop:
	VMOVUPS (BX), Y1
	VFMADD231PS (AX), Y0, Y1
	VMOVUPS Y1, (BX)
	ADDQ $32, AX
	ADDQ $32, BX
	DECQ CX
	JNZ axpy8loop

axpydone:
	VZEROUPPER
	RET

// func addAVX2(dst, x *float32, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), BX
	MOVQ x+8(FP), AX
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ adddone

addloop:
	VMOVUPS (BX), Y1
	VADDPS (AX), Y1, Y1
	VMOVUPS Y1, (BX)
	ADDQ $32, AX
	ADDQ $32, BX
	DECQ CX
	JNZ addloop

adddone:
	VZEROUPPER
	RET

// func scaleAVX2(x *float32, n int, s float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), BX
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y0
	SHRQ $3, CX
	JZ scaledone

scaleloop:
	VMULPS (BX), Y0, Y1
	VMOVUPS Y1, (BX)
	ADDQ $32, BX
	DECQ CX
	JNZ scaleloop

scaledone:
	VZEROUPPER
	RET

// func geluAVX2(x *float32, n int)
TEXT ·geluAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), BX
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	JZ geludone

geluloop:
	VMOVUPS (BX), Y0
	VMULPS invSqrt2<>(SB), Y0, Y1
	VMINPS four<>(SB), Y1, Y1
	VMAXPS minusFour<>(SB), Y1, Y1
	VMULPS Y1, Y1, Y2
	VMOVUPS erfA13<>(SB), Y3
	VFMADD213PS erfA11<>(SB), Y2, Y3
	VFMADD213PS erfA9<>(SB), Y2, Y3
	VFMADD213PS erfA7<>(SB), Y2, Y3
	VFMADD213PS erfA5<>(SB), Y2, Y3
	VFMADD213PS erfA3<>(SB), Y2, Y3
	VFMADD213PS erfA1<>(SB), Y2, Y3
	VMULPS Y1, Y3, Y3
	VMOVUPS erfB8<>(SB), Y4
	VFMADD213PS erfB6<>(SB), Y2, Y4
	VFMADD213PS erfB4<>(SB), Y2, Y4
	VFMADD213PS erfB2<>(SB), Y2, Y4
	VFMADD213PS erfB0<>(SB), Y2, Y4
	VDIVPS Y4, Y3, Y3
	VMULPS half<>(SB), Y0, Y0
	VFMADD213PS Y0, Y0, Y3
	VMOVUPS Y3, (BX)
	ADDQ $32, BX
	DECQ CX
	JNZ geluloop

geludone:
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), BX
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VMOVUPS (BX), Y0
	ADDQ $32, BX
	DECQ CX
	JZ maxdone

maxloop:
	VMAXPS (BX), Y0, Y0
	ADDQ $32, BX
	DECQ CX
	JNZ maxloop

maxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXSS X1, X0, X0
	MOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func expSubSumAVX2(x *float32, n int, max float32) float32
TEXT ·expSubSumAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), BX
	MOVQ n+8(FP), CX
	VBROADCASTSS max+16(FP), Y5
	VXORPS Y4, Y4, Y4
	SHRQ $3, CX
	JZ expdone

exploop:
	VMOVUPS (BX), Y0
	VSUBPS Y5, Y0, Y0
	EXP8
	VMOVUPS Y0, (BX)
	VADDPS Y0, Y4, Y4
	ADDQ $32, BX
	DECQ CX
	JNZ exploop

expdone:
	VMOVAPS Y4, Y0
	HSUM
	MOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func sumAVX2(x *float32, n int) float32
TEXT ·sumAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), BX
	MOVQ n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	SHRQ $3, CX
	JZ sumdone

sumloop:
	VADDPS (BX), Y0, Y0
	ADDQ $32, BX
	DECQ CX
	JZ sumdone
	VADDPS (BX), Y2, Y2
	ADDQ $32, BX
	DECQ CX
	JNZ sumloop

sumdone:
	VADDPS Y2, Y0, Y0
	HSUM
	MOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func sumSqDevAVX2(x *float32, n int, mean float32) float32
TEXT ·sumSqDevAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), BX
	MOVQ n+8(FP), CX
	VBROADCASTSS mean+16(FP), Y5
	VXORPS Y0, Y0, Y0
	VXORPS Y2, Y2, Y2
	SHRQ $3, CX
	JZ ssddone

ssdloop:
	VMOVUPS (BX), Y3
	VSUBPS Y5, Y3, Y3
	VFMADD231PS Y3, Y3, Y0
	ADDQ $32, BX
	DECQ CX
	JZ ssddone
	VMOVUPS (BX), Y3
	VSUBPS Y5, Y3, Y3
	VFMADD231PS Y3, Y3, Y2
	ADDQ $32, BX
	DECQ CX
	JNZ ssdloop

ssddone:
	VADDPS Y2, Y0, Y0
	HSUM
	MOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func normAVX2(x, gamma, beta *float32, n int, mean, inv float32)
// x = (x-mean)*inv*gamma + beta
TEXT ·normAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), BX
	MOVQ gamma+8(FP), SI
	MOVQ beta+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSS mean+32(FP), Y5
	VBROADCASTSS inv+36(FP), Y6
	SHRQ $3, CX
	JZ normdone

normloop:
	VMOVUPS (BX), Y0
	VSUBPS Y5, Y0, Y0
	VMULPS Y6, Y0, Y0
	VMOVUPS (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS Y1, (BX)
	ADDQ $32, BX
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ normloop

normdone:
	VZEROUPPER
	RET
