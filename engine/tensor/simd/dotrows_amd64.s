//go:build amd64 && !purego

#include "textflag.h"

// func dotRows4x3AVX2(acc *[96]float32, dy0, dy1, dy2, dy3, x0, x1, x2 *float32, rows, vecs, skip int)
//
// Y0–Y11 hold acc's twelve vectors (k·3+t); per eight lanes, Y12–Y14 the
// three taps' inputs and Y15 each gradient row in turn. AX walks the
// gradient rows (contiguous: row y+1 follows row y), BX the taps' windows,
// which move on skip bytes more at the end of each row.
TEXT ·dotRows4x3AVX2(SB), NOSPLIT, $0-88
	MOVQ acc+0(FP), DI
	MOVQ dy0+8(FP), R8
	MOVQ dy1+16(FP), R9
	MOVQ dy2+24(FP), R10
	MOVQ dy3+32(FP), R11
	MOVQ x0+40(FP), R12
	MOVQ x1+48(FP), R13
	MOVQ x2+56(FP), R14
	MOVQ rows+64(FP), DX
	MOVQ vecs+72(FP), SI
	MOVQ skip+80(FP), R15

	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	VMOVUPS 256(DI), Y8
	VMOVUPS 288(DI), Y9
	VMOVUPS 320(DI), Y10
	VMOVUPS 352(DI), Y11
	XORQ    AX, AX
	XORQ    BX, BX

row:
	MOVQ SI, CX

vec:
	VMOVUPS     (R12)(BX*1), Y12
	VMOVUPS     (R13)(BX*1), Y13
	VMOVUPS     (R14)(BX*1), Y14
	VMOVUPS     (R8)(AX*1), Y15
	VFMADD231PS Y12, Y15, Y0
	VFMADD231PS Y13, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VMOVUPS     (R9)(AX*1), Y15
	VFMADD231PS Y12, Y15, Y3
	VFMADD231PS Y13, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VMOVUPS     (R10)(AX*1), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VMOVUPS     (R11)(AX*1), Y15
	VFMADD231PS Y12, Y15, Y9
	VFMADD231PS Y13, Y15, Y10
	VFMADD231PS Y14, Y15, Y11
	ADDQ        $32, AX
	ADDQ        $32, BX
	DECQ        CX
	JNZ         vec

	ADDQ R15, BX
	DECQ DX
	JNZ  row

	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VMOVUPS Y8, 256(DI)
	VMOVUPS Y9, 288(DI)
	VMOVUPS Y10, 320(DI)
	VMOVUPS Y11, 352(DI)
	VZEROUPPER
	RET
