//go:build amd64 && !purego

#include "textflag.h"

// LOAD8 loads the eight window elements of a group of outputs at LO, one
// per output: contiguous for stride 1; for stride 2, the even floats of
// LO..LO+60, read as LO and HI = LO+28 so that nothing past the last
// output's element is read. VSHUFPS 0xD8 takes elements 0, 2 of LO and
// 1, 3 of HI in each 128-bit half, VPERMPD 0xD8 puts the halves' pairs
// in order.
#define LOAD8(LO, HI, Y, T) \
	CMPQ    DX, $1          \
	JNE     3(PC)           \
	VMOVUPS LO, Y           \
	JMP     5(PC)           \
	VMOVUPS LO, Y           \
	VMOVUPS HI, T           \
	VSHUFPS $0xD8, T, Y, Y  \
	VPERMPD $0xD8, Y, Y

// PAIR sets a-8(SP) and b-16(SP) to the pair of groups of eight outputs
// that start at o = BX: b = min(o+8, n-8), a = min(o, b) (n ≥ 8; the last
// groups overlap those before them), and R12 to the first window row of
// group a, R13 to its offset from src, R15 to b's byte offset from a's and
// Y13 to its offset in elements.
#define PAIR(NOFF)                \
	MOVQ    NOFF, AX          \
	SUBQ    $8, AX            \
	LEAQ    8(BX), CX         \
	CMPQ    CX, AX            \
	CMOVQGT AX, CX            \
	MOVQ    BX, AX            \
	CMPQ    AX, CX            \
	CMOVQGT CX, AX            \
	MOVQ    AX, a-8(SP)       \
	MOVQ    CX, b-16(SP)      \
	MOVQ    AX, R13           \
	IMULQ   DX, R13           \
	LEAQ    (SI)(R13*4), R12  \
	SUBQ    AX, CX            \
	IMULQ   DX, CX            \
	VMOVD   CX, X13           \
	VPBROADCASTD X13, Y13     \
	LEAQ    (CX*4), R15

// COMBINE takes v (V) into the maxima M and argmaxes I of a group where
// M < v, or where M is NaN and v is not: Caffe's scan, lane by lane. That
// is !(v <= M) (NLE_US, true when either is NaN) and v not NaN (ORD),
// whose compare is off the chain through M. IX is v's index; T1, T3 are
// scratch.
#define COMBINE(V, IX, M, I, T1, T3) \
	VCMPPS    $7, V, V, T3  \
	VCMPPS    $6, M, V, T1  \
	VANDPS    T3, T1, T1    \
	VBLENDVPS T1, V, M, M   \
	VBLENDVPS T1, IX, I, I

// func maxPoolRowAVX2(dst *float32, mask *int32, src *float32, n, w, rows, kw, stride int, i0 int32, lanes *[8]int32)
//
// Two groups of eight outputs at a time (independent chains that the CPU
// overlaps): Y0, Y1 and Y8, Y9 hold their maxima and argmaxes; Y7 is the
// current element's index in group a's lanes. n ≥ 8.
TEXT ·maxPoolRowAVX2(SB), NOSPLIT, $16-80
	MOVQ         dst+0(FP), DI
	MOVQ         mask+8(FP), R8
	MOVQ         src+16(FP), SI
	MOVQ         w+32(FP), R9
	MOVQ         rows+40(FP), R10
	MOVQ         kw+48(FP), R11
	MOVQ         stride+56(FP), DX
	MOVL         i0+64(FP), AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVQ         lanes+72(FP), AX
	VPADDD       (AX), Y14, Y14   // Y14 = i0 + lane·stride
	MOVL         $1, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15         // ones
	XORQ         BX, BX

mpair:
	PAIR(n+24(FP))
	LOAD8((R12), 28(R12), Y0, Y3)
	LOAD8((R12)(R15*1), 28(R12)(R15*1), Y8, Y3)
	VMOVD        R13, X1
	VPBROADCASTD X1, Y1
	VPADDD       Y14, Y1, Y1
	VPADDD       Y13, Y1, Y9
	MOVQ         R10, AX

mrow:
	MOVQ         R12, R14
	VMOVD        R13, X7
	VPBROADCASTD X7, Y7
	VPADDD       Y14, Y7, Y7
	MOVQ         R11, CX

mcol:
	LOAD8((R14), 28(R14), Y2, Y3)
	LOAD8((R14)(R15*1), 28(R14)(R15*1), Y10, Y3)
	COMBINE(Y2, Y7, Y0, Y1, Y4, Y6)
	VPADDD Y13, Y7, Y11
	COMBINE(Y10, Y11, Y8, Y9, Y12, Y5)
	VPADDD Y15, Y7, Y7
	ADDQ   $4, R14
	DECQ   CX
	JNZ    mcol

	LEAQ (R12)(R9*4), R12
	ADDQ R9, R13
	DECQ AX
	JNZ  mrow

	MOVQ    a-8(SP), AX
	MOVQ    b-16(SP), CX
	VMOVUPS Y0, (DI)(AX*4)
	VMOVDQU Y1, (R8)(AX*4)
	VMOVUPS Y8, (DI)(CX*4)
	VMOVDQU Y9, (R8)(CX*4)
	ADDQ    $16, BX
	CMPQ    BX, n+24(FP)
	JLT     mpair
	VZEROUPPER
	RET

// func avePoolRowAVX2(dst *float32, src *float32, n, w, rows, kw, stride int, div float32)
//
// Two groups of eight outputs at a time: each lane adds its window's
// elements onto +0 in row-major order, then divides by div. n ≥ 8.
TEXT ·avePoolRowAVX2(SB), NOSPLIT, $16-60
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         w+24(FP), R9
	MOVQ         rows+32(FP), R10
	MOVQ         kw+40(FP), R11
	MOVQ         stride+48(FP), DX
	VBROADCASTSS div+56(FP), Y7
	XORQ         BX, BX

apair:
	PAIR(n+16(FP))
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8
	MOVQ   R10, AX

arow:
	MOVQ R12, R14
	MOVQ R11, CX

acol:
	LOAD8((R14), 28(R14), Y2, Y3)
	LOAD8((R14)(R15*1), 28(R14)(R15*1), Y10, Y3)
	VADDPS Y2, Y0, Y0
	VADDPS Y10, Y8, Y8
	ADDQ   $4, R14
	DECQ   CX
	JNZ    acol

	LEAQ (R12)(R9*4), R12
	DECQ AX
	JNZ  arow

	VDIVPS  Y7, Y0, Y0
	VDIVPS  Y7, Y8, Y8
	MOVQ    a-8(SP), AX
	MOVQ    b-16(SP), CX
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y8, (DI)(CX*4)
	ADDQ    $16, BX
	CMPQ    BX, n+16(FP)
	JLT     apair
	VZEROUPPER
	RET
