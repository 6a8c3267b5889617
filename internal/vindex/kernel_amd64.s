//go:build !purego

#include "textflag.h"

// func dotBatchAVX2(q *int16, codes *int8, dim, n int, out *int32)
TEXT ·dotBatchAVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ codes+8(FP), DI
	MOVQ dim+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ out+32(FP), R8

vector:
	TESTQ DX, DX
	JZ    done
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	MOVQ  SI, R9
	MOVQ  CX, R10

loop64:
	CMPQ      R10, $64
	JLT       loop16
	VPMOVSXBW (DI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMOVSXBW 32(DI), Y6
	VPMOVSXBW 48(DI), Y7
	VPMADDWD  (R9), Y4, Y4
	VPMADDWD  32(R9), Y5, Y5
	VPMADDWD  64(R9), Y6, Y6
	VPMADDWD  96(R9), Y7, Y7
	VPADDD    Y4, Y0, Y0
	VPADDD    Y5, Y1, Y1
	VPADDD    Y6, Y2, Y2
	VPADDD    Y7, Y3, Y3
	ADDQ      $64, DI
	ADDQ      $128, R9
	SUBQ      $64, R10
	JMP       loop64

loop16:
	CMPQ      R10, $16
	JLT       reduce
	VPMOVSXBW (DI), Y4
	VPMADDWD  (R9), Y4, Y4
	VPADDD    Y4, Y0, Y0
	ADDQ      $16, DI
	ADDQ      $32, R9
	SUBQ      $16, R10
	JMP       loop16

reduce:
	VPADDD       Y1, Y0, Y0
	VPADDD       Y3, Y2, Y2
	VPADDD       Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX

tail:
	TESTQ   R10, R10
	JZ      store
	MOVBQSX (DI), R11
	MOVWQSX (R9), R12
	IMULQ   R12, R11
	ADDL    R11, AX
	INCQ    DI
	ADDQ    $2, R9
	DECQ    R10
	JMP     tail

store:
	MOVL AX, (R8)
	ADDQ $4, R8
	DECQ DX
	JMP  vector

done:
	VZEROUPPER
	RET
