//go:build !purego

#include "textflag.h"

// STORE_SUM_Y0 adds the eight 32-bit lanes of Y0 and stores the sum at
// (R8), the vector's place in out.
#define STORE_SUM_Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPADDD       X1, X0, X0 \
	VPSHUFD      $0x4e, X0, X1 \
	VPADDD       X1, X0, X0 \
	VPSHUFD      $0xb1, X0, X1 \
	VPADDD       X1, X0, X0 \
	VMOVD        X0, (R8)

// func dotDigitsAVX2(q *int16, plane *byte, stride, n int, out *int32)
TEXT ·dotDigitsAVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ plane+8(FP), DI
	MOVQ stride+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ out+32(FP), R8

	// Y15: 0x000f in every 16-bit lane, the low-digit mask.
	MOVL         $0x000f000f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15

vector:
	TESTQ DX, DX
	JZ    done
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ  SI, R9
	MOVQ  CX, R10

loop32:
	CMPQ      R10, $32
	JLT       loop16
	VPMOVZXBW (DI), Y4
	VPMOVZXBW 16(DI), Y6
	VPSRLW    $4, Y4, Y5
	VPSRLW    $4, Y6, Y7
	VPAND     Y15, Y4, Y4
	VPAND     Y15, Y6, Y6
	VPMADDWD  (R9), Y4, Y4
	VPMADDWD  32(R9), Y5, Y5
	VPMADDWD  64(R9), Y6, Y6
	VPMADDWD  96(R9), Y7, Y7
	VPADDD    Y4, Y0, Y0
	VPADDD    Y5, Y1, Y1
	VPADDD    Y6, Y2, Y2
	VPADDD    Y7, Y3, Y3
	ADDQ      $32, DI
	ADDQ      $128, R9
	SUBQ      $32, R10
	JMP       loop32

loop16:
	CMPQ      R10, $16
	JLT       reduce
	VPMOVZXBW (DI), Y4
	VPSRLW    $4, Y4, Y5
	VPAND     Y15, Y4, Y4
	VPMADDWD  (R9), Y4, Y4
	VPMADDWD  32(R9), Y5, Y5
	VPADDD    Y4, Y0, Y0
	VPADDD    Y5, Y1, Y1
	ADDQ      $16, DI
	ADDQ      $64, R9
	SUBQ      $16, R10
	JMP       loop16

reduce:
	VPADDD       Y1, Y0, Y0
	VPADDD       Y3, Y2, Y2
	VPADDD       Y2, Y0, Y0
	STORE_SUM_Y0
	ADDQ         $4, R8
	DECQ         DX
	JMP          vector

done:
	VZEROUPPER
	RET

// func dotDigitsVNNI(qlo, qhi *int8, plane *byte, stride, n int, out *int32)
//
// For each vector: 64 bytes of the plane at a time are split into their
// low and high digits (unsigned bytes), and VPDPBUSD multiplies each with
// the matching 64 signed query bytes and adds groups of four into 16 lanes.
// stride is a multiple of 64.
TEXT ·dotDigitsVNNI(SB), NOSPLIT, $0-48
	MOVQ qlo+0(FP), SI
	MOVQ qhi+8(FP), BX
	MOVQ plane+16(FP), DI
	MOVQ stride+24(FP), CX
	MOVQ n+32(FP), DX
	MOVQ out+40(FP), R8

	// Z31: 0x0f in every byte, the digit mask.
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31

vnniVector:
	TESTQ  DX, DX
	JZ     vnniDone
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	XORQ   R9, R9

vnniChunk:
	VMOVDQU64 (DI)(R9*1), Z2
	VPSRLW    $4, Z2, Z3
	VPANDD    Z31, Z2, Z2
	VPANDD    Z31, Z3, Z3
	VPDPBUSD  (SI)(R9*1), Z2, Z0
	VPDPBUSD  (BX)(R9*1), Z3, Z1
	ADDQ      $64, R9
	CMPQ      R9, CX
	JLT       vnniChunk

	VPADDD        Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD        Y1, Y0, Y0
	STORE_SUM_Y0
	ADDQ          $4, R8
	ADDQ          CX, DI
	DECQ          DX
	JMP           vnniVector

vnniDone:
	VZEROUPPER
	RET

// func dotDigits8AVX2(qlo, qhi *int8, plane *byte, stride, n int, out *int32)
//
// dotDigitsVNNI for CPUs with AVX2 and no AVX-512 VNNI: 64 bytes of the
// plane a turn are split into their low and high digits (unsigned bytes);
// VPMADDUBSW multiplies each with the matching signed query bytes and adds
// pairs into 16-bit lanes, four such sums are added (each at most
// 2·15·127, so no lane overflows), and VPMADDWD with ones widens them into
// eight 32-bit lanes. stride is a multiple of 64.
TEXT ·dotDigits8AVX2(SB), NOSPLIT, $0-48
	MOVQ qlo+0(FP), SI
	MOVQ qhi+8(FP), BX
	MOVQ plane+16(FP), DI
	MOVQ stride+24(FP), CX
	MOVQ n+32(FP), DX
	MOVQ out+40(FP), R8

	// Y15: 0x0f in every byte, the digit mask; Y14: 1 in every 16-bit lane.
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x00010001, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

b8Vector:
	TESTQ DX, DX
	JZ    b8Done
	VPXOR Y0, Y0, Y0
	XORQ  R9, R9

b8Chunk:
	VMOVDQU    (DI)(R9*1), Y2
	VMOVDQU    32(DI)(R9*1), Y5
	VPSRLW     $4, Y2, Y3
	VPSRLW     $4, Y5, Y6
	VPAND      Y15, Y2, Y2
	VPAND      Y15, Y3, Y3
	VPAND      Y15, Y5, Y5
	VPAND      Y15, Y6, Y6
	VPMADDUBSW (SI)(R9*1), Y2, Y2
	VPMADDUBSW (BX)(R9*1), Y3, Y3
	VPMADDUBSW 32(SI)(R9*1), Y5, Y5
	VPMADDUBSW 32(BX)(R9*1), Y6, Y6
	VPADDW     Y3, Y2, Y2
	VPADDW     Y6, Y5, Y5
	VPADDW     Y5, Y2, Y2
	VPMADDWD   Y14, Y2, Y2
	VPADDD     Y2, Y0, Y0
	ADDQ       $64, R9
	CMPQ       R9, CX
	JLT        b8Chunk

	STORE_SUM_Y0
	ADDQ         $4, R8
	ADDQ         CX, DI
	DECQ         DX
	JMP          b8Vector

b8Done:
	VZEROUPPER
	RET

// func hamming6POPCNT(signs, qs *uint64, n int, hs *uint16, hist *int)
TEXT ·hamming6POPCNT(SB), NOSPLIT, $0-40
	MOVQ signs+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ n+16(FP), DX
	MOVQ hs+24(FP), R8
	MOVQ hist+32(FP), R15
	MOVQ 0(DI), R9
	MOVQ 8(DI), R10
	MOVQ 16(DI), R11
	MOVQ 24(DI), R12
	MOVQ 32(DI), R13

row:
	MOVQ    0(SI), AX
	XORQ    R9, AX
	POPCNTQ AX, AX
	MOVQ    8(SI), BX
	XORQ    R10, BX
	POPCNTQ BX, BX
	ADDQ    BX, AX
	MOVQ    16(SI), CX
	XORQ    R11, CX
	POPCNTQ CX, CX
	ADDQ    CX, AX
	MOVQ    24(SI), BX
	XORQ    R12, BX
	POPCNTQ BX, BX
	ADDQ    BX, AX
	MOVQ    32(SI), CX
	XORQ    R13, CX
	POPCNTQ CX, CX
	ADDQ    CX, AX
	MOVQ    40(SI), BX
	XORQ    40(DI), BX
	POPCNTQ BX, BX
	ADDQ    BX, AX
	MOVW    AX, (R8)
	INCQ    (R15)(AX*8)
	ADDQ    $48, SI
	ADDQ    $2, R8
	DECQ    DX
	JNZ     row
	RET

// func fwhtWideAVX2(buf *int32, n int)
// The levels of the Walsh–Hadamard transform of buf[:n] whose butterflies
// span at least 8 values: eight pairs an instruction pair.
TEXT ·fwhtWideAVX2(SB), NOSPLIT, $0-16
	MOVQ buf+0(FP), SI
	MOVQ n+8(FP), CX
	SHLQ $2, CX // n in bytes
	MOVQ $32, DX // h in bytes: 8 values

level:
	CMPQ DX, CX
	JAE  done
	XORQ R8, R8 // the group's first byte

group:
	CMPQ R8, CX
	JAE  nextlevel
	MOVQ R8, R9
	LEAQ (R8)(DX*1), R10

pair:
	LEAQ    (R9)(DX*1), R11
	VMOVDQU (SI)(R9*1), Y0
	VMOVDQU (SI)(R11*1), Y1
	VPADDD  Y1, Y0, Y2
	VPSUBD  Y1, Y0, Y3
	VMOVDQU Y2, (SI)(R9*1)
	VMOVDQU Y3, (SI)(R11*1)
	ADDQ    $32, R9
	CMPQ    R9, R10
	JB      pair
	LEAQ    (R8)(DX*2), R8
	JMP     group

nextlevel:
	SHLQ $1, DX
	JMP  level

done:
	VZEROUPPER
	RET

// func flipAVX2(buf, flip *int32, n int, shift uint64)
// buf[i] = (buf[i] >> shift) with its sign flipped where flip[i] is -1:
// (c ^ f) - f; eight values a turn, n a multiple of 8.
TEXT ·flipAVX2(SB), NOSPLIT, $0-32
	MOVQ buf+0(FP), SI
	MOVQ flip+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ shift+24(FP), AX
	VMOVQ AX, X4

flipnext:
	VMOVDQU (SI), Y0
	VMOVDQU (DI), Y1
	VPSRAD  X4, Y0, Y0
	VPXOR   Y1, Y0, Y0
	VPSUBD  Y1, Y0, Y0
	VMOVDQU Y0, (SI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     flipnext
	VZEROUPPER
	RET

// func positiveAVX2(buf *int32, words int, dst *uint64)
// Bit i of dst[w] is set where buf[64w + i] > 0.
TEXT ·positiveAVX2(SB), NOSPLIT, $0-24
	MOVQ  buf+0(FP), SI
	MOVQ  dst+16(FP), DI
	VPXOR Y7, Y7, Y7

word:
	XORQ R8, R8
	XORQ DX, DX // bit position

eight:
	VMOVDQU   (SI), Y0
	VPCMPGTD  Y7, Y0, Y0
	VMOVMSKPS Y0, AX
	MOVQ      DX, CX
	SHLQ      CX, AX
	ORQ       AX, R8
	ADDQ      $32, SI
	ADDQ      $8, DX
	CMPQ      DX, $64
	JB        eight
	MOVQ      R8, (DI)
	ADDQ      $8, DI
	DECQ      words+8(FP)
	JNZ       word
	VZEROUPPER
	RET
