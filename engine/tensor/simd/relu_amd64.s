//go:build amd64 && !purego

#include "textflag.h"

// func selectScaledSSE(dst, ref, v []float32, s float32)
//
// dst[i] = ref[i] > 0 ? v[i] : s*v[i] for i < len(dst), eight floats per
// iteration: the mask is 0 < ref (CMPPS predicate 1, LT, false for NaN),
// the result (v AND mask) OR (s*v ANDNOT mask), bitwise the scalar loop's.
TEXT ·selectScaledSSE(SB), NOSPLIT, $0-76
	MOVQ  dst_base+0(FP), DI
	MOVQ  dst_len+8(FP), CX
	MOVQ  ref_base+24(FP), SI
	MOVQ  v_base+48(FP), DX
	MOVSS s+72(FP), X7
	SHUFPS $0, X7, X7
	MOVQ  CX, BX
	SHRQ  $3, BX
	JZ    tail

loop8:
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	XORPS  X2, X2
	XORPS  X3, X3
	CMPPS  X0, X2, 1        // X2 = 0 < ref
	CMPPS  X1, X3, 1
	MOVUPS 0(DX), X4
	MOVUPS 16(DX), X5
	MOVAPS X4, X0
	MOVAPS X5, X1
	MULPS  X7, X0           // s*v
	MULPS  X7, X1
	ANDPS  X2, X4           // v & m
	ANDPS  X3, X5
	ANDNPS X0, X2           // s*v &^ m
	ANDNPS X1, X3
	ORPS   X2, X4
	ORPS   X3, X5
	MOVUPS X4, 0(DI)
	MOVUPS X5, 16(DI)
	ADDQ   $32, SI
	ADDQ   $32, DX
	ADDQ   $32, DI
	DECQ   BX
	JNZ    loop8

tail:
	ANDQ $7, CX
	JZ   done

loop1:
	MOVSS  0(SI), X0
	XORPS  X2, X2
	CMPPS  X0, X2, 1
	MOVSS  0(DX), X4
	MOVAPS X4, X0
	MULSS  X7, X0
	ANDPS  X2, X4
	ANDNPS X0, X2
	ORPS   X2, X4
	MOVSS  X4, 0(DI)
	ADDQ   $4, SI
	ADDQ   $4, DX
	ADDQ   $4, DI
	DECQ   CX
	JNZ    loop1

done:
	RET
