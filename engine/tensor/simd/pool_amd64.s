//go:build amd64 && !purego

#include "textflag.h"

// LOADW loads the four window elements of a group of outputs at (R), one
// per output: contiguous for stride 1; for stride 2, the even floats of
// (R)..12(R)+15, read as (R) and 12(R) so that nothing past the last
// output's element is read (SHUFPS 0xD8 takes elements 0, 2 of the first
// and 1, 3 of the second).
#define LOADW(R, X, T) \
	CMPQ   DX, $1      \
	JNE    3(PC)       \
	MOVUPS (R), X      \
	JMP    4(PC)       \
	MOVUPS (R), X      \
	MOVUPS 12(R), T    \
	SHUFPS $0xD8, T, X

// func maxPoolRowSSE(dst *float32, mask *int32, src *float32, n, w, rows, kw, stride int, i0 int32, lanes *[4]int32)
//
// Four outputs per group: X0 holds their maxima, X1 their argmaxes. Each
// window element v in row-major order replaces the maximum where
// best < v, or where best is NaN and v is not: !(v <= best) (CMPPS
// NLE_US) and v not NaN (ORD), the scalar scan's test, lane by lane, so
// the results are bitwise its. The
// last group starts at n-4 and overlaps the one before it (n ≥ 4).
TEXT ·maxPoolRowSSE(SB), NOSPLIT, $0-80
	MOVQ    dst+0(FP), DI
	MOVQ    mask+8(FP), R8
	MOVQ    src+16(FP), SI
	MOVQ    w+32(FP), R9
	MOVQ    rows+40(FP), R10
	MOVQ    kw+48(FP), R11
	MOVQ    stride+56(FP), DX
	MOVLQSX i0+64(FP), AX
	MOVQ    AX, X14
	PSHUFD  $0, X14, X14
	MOVQ    lanes+72(FP), AX
	MOVOU   (AX), X15
	PADDL   X15, X14          // X14 = i0 + lane·stride
	XORQ    BX, BX            // o, the group's first output

mgroup:
	MOVQ n+24(FP), AX
	SUBQ $4, AX
	CMPQ BX, AX
	JLE  mstart
	MOVQ AX, BX

mstart:
	MOVQ   BX, R13
	IMULQ  DX, R13            // R13: offset of the window row's first element from src
	LEAQ   (SI)(R13*4), R12   // R12: the window row
	LOADW(R12, X0, X3)
	MOVQ   R13, X1
	PSHUFD $0, X1, X1
	PADDL  X14, X1
	MOVQ   R10, AX            // rows left

mrow:
	MOVQ R12, R14
	MOVQ R13, R15
	MOVQ R11, CX              // columns left

mcol:
	LOADW(R14, X2, X3)
	MOVAPS X2, X6
	CMPPS  X2, X6, 7          // v is not NaN
	MOVAPS X2, X4
	CMPPS  X0, X4, 6          // !(v <= best): v > best, or either is NaN
	ANDPS  X6, X4             // m: v wins
	ANDPS  X4, X2             // v & m
	MOVAPS X4, X5
	ANDNPS X0, X5             // best &^ m
	ORPS   X5, X2
	MOVAPS X2, X0
	MOVQ   R15, X7
	PSHUFD $0, X7, X7
	PADDL  X14, X7            // v's index
	PAND   X4, X7
	PANDN  X1, X4
	POR    X4, X7
	MOVO   X7, X1
	ADDQ   $4, R14
	INCQ   R15
	DECQ   CX
	JNZ    mcol

	LEAQ (R12)(R9*4), R12
	ADDQ R9, R13
	DECQ AX
	JNZ  mrow

	MOVUPS X0, (DI)(BX*4)
	MOVOU  X1, (R8)(BX*4)
	ADDQ   $4, BX
	CMPQ   BX, n+24(FP)
	JLT    mgroup
	RET

// func avePoolRowSSE(dst *float32, src *float32, n, w, rows, kw, stride int, div float32)
//
// Four outputs per group: each lane adds its window's elements onto +0 in
// row-major order, then divides by div, as the scalar loop.
TEXT ·avePoolRowSSE(SB), NOSPLIT, $0-60
	MOVQ   dst+0(FP), DI
	MOVQ   src+8(FP), SI
	MOVQ   w+24(FP), R9
	MOVQ   rows+32(FP), R10
	MOVQ   kw+40(FP), R11
	MOVQ   stride+48(FP), DX
	MOVSS  div+56(FP), X7
	SHUFPS $0, X7, X7
	XORQ   BX, BX

agroup:
	MOVQ n+16(FP), AX
	SUBQ $4, AX
	CMPQ BX, AX
	JLE  astart
	MOVQ AX, BX

astart:
	MOVQ  BX, R13
	IMULQ DX, R13
	LEAQ  (SI)(R13*4), R12
	XORPS X0, X0
	MOVQ  R10, AX

arow:
	MOVQ R12, R14
	MOVQ R11, CX

acol:
	LOADW(R14, X2, X3)
	ADDPS X2, X0
	ADDQ  $4, R14
	DECQ  CX
	JNZ   acol

	LEAQ (R12)(R9*4), R12
	DECQ AX
	JNZ  arow

	DIVPS  X7, X0
	MOVUPS X0, (DI)(BX*4)
	ADDQ   $4, BX
	CMPQ   BX, n+16(FP)
	JLT    agroup
	RET

// func addStrided2SSE(dst, v *float32, groups int)
//
// dst[2o] += v[o] for o < 4·groups: v's four floats interleaved with
// zeros (UNPCKLPS, UNPCKHPS) and added to eight of dst.
TEXT ·addStrided2SSE(SB), NOSPLIT, $0-24
	MOVQ  dst+0(FP), DI
	MOVQ  v+8(FP), SI
	MOVQ  groups+16(FP), CX
	XORPS X7, X7

sloop:
	MOVUPS   (SI), X0
	MOVAPS   X0, X1
	UNPCKLPS X7, X0         // v0 0 v1 0
	UNPCKHPS X7, X1         // v2 0 v3 0
	MOVUPS   (DI), X2
	MOVUPS   16(DI), X3
	ADDPS    X0, X2
	ADDPS    X1, X3
	MOVUPS   X2, (DI)
	MOVUPS   X3, 16(DI)
	ADDQ     $16, SI
	ADDQ     $32, DI
	DECQ     CX
	JNZ      sloop
	RET
