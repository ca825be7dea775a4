//go:build amd64 && !purego

#include "textflag.h"

// func addRunsSSE(dst, src *float32, rows, n4, dstep, sstep int)
//
// For each of rows runs: dst[i] += src[i] for the run's 4·n4 floats, four
// at a time (ADDPS, bitwise the scalar adds); then dst moves on dstep
// floats and src sstep. The caller guarantees rows, n4 > 0.
TEXT ·addRunsSSE(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), CX
	MOVQ n4+24(FP), DX
	MOVQ dstep+32(FP), R8
	MOVQ sstep+40(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9

row:
	MOVQ DI, R10
	MOVQ SI, R11
	MOVQ DX, BX

col:
	MOVUPS 0(R10), X0
	MOVUPS 0(R11), X1
	ADDPS  X1, X0
	MOVUPS X0, 0(R10)
	ADDQ   $16, R10
	ADDQ   $16, R11
	DECQ   BX
	JNZ    col

	ADDQ R8, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  row
	RET
