//go:build amd64 && !purego

#include "textflag.h"

// func addSSE(dst, src []float32)
//
// dst[i] += src[i] for i < len(dst), 16 floats per iteration with SSE
// (ADDPS: four IEEE single-precision adds, bitwise what the scalar loop
// computes), then one at a time. The caller guarantees len(src) >= len(dst).
TEXT ·addSSE(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ CX, BX
	SHRQ $4, BX
	JZ   tail

loop16:
	MOVUPS 0(DI), X0
	MOVUPS 16(DI), X1
	MOVUPS 32(DI), X2
	MOVUPS 48(DI), X3
	MOVUPS 0(SI), X4
	MOVUPS 16(SI), X5
	MOVUPS 32(SI), X6
	MOVUPS 48(SI), X7
	ADDPS  X4, X0
	ADDPS  X5, X1
	ADDPS  X6, X2
	ADDPS  X7, X3
	MOVUPS X0, 0(DI)
	MOVUPS X1, 16(DI)
	MOVUPS X2, 32(DI)
	MOVUPS X3, 48(DI)
	ADDQ   $64, DI
	ADDQ   $64, SI
	DECQ   BX
	JNZ    loop16

tail:
	ANDQ $15, CX
	JZ   done

loop1:
	MOVSS 0(DI), X0
	ADDSS 0(SI), X0
	MOVSS X0, 0(DI)
	ADDQ  $4, DI
	ADDQ  $4, SI
	DECQ  CX
	JNZ   loop1

done:
	RET
