//go:build amd64 && !purego

#include "textflag.h"

// The normalisation kernels of norm.go in SSE2: reductions in 16 lanes
// (four registers) folded in norm.go's fixed tree, element-wise passes
// eight floats per iteration, each operation rounded on its own, so every
// result is bitwise the portable Go version's.

// FOLD16 folds the 16 lanes of a, b, c, d into the low lane of a, using t:
// (a+b) + (c+d) per lane, then (l0+l2) + (l1+l3).
#define FOLD16(a, b, c, d, t) \
	ADDPS   b, a;  \
	ADDPS   d, c;  \
	ADDPS   c, a;  \
	MOVHLPS a, t;  \
	ADDPS   t, a;  \
	PSHUFD  $0x55, a, t; \
	ADDSS   t, a

// func sumSSE(x []float32) float32
TEXT ·sumSSE(SB), NOSPLIT, $0-28
	MOVQ  x_base+0(FP), SI
	MOVQ  x_len+8(FP), CX
	XORPS X0, X0
	XORPS X1, X1
	XORPS X2, X2
	XORPS X3, X3
	MOVQ  CX, BX
	SHRQ  $4, BX
	JZ    sumfold

sumloop:
	MOVUPS 0(SI), X4
	MOVUPS 16(SI), X5
	MOVUPS 32(SI), X6
	MOVUPS 48(SI), X7
	ADDPS  X4, X0
	ADDPS  X5, X1
	ADDPS  X6, X2
	ADDPS  X7, X3
	ADDQ   $64, SI
	DECQ   BX
	JNZ    sumloop

sumfold:
	FOLD16(X0, X1, X2, X3, X4)
	ANDQ $15, CX
	JZ   sumdone

sumtail:
	MOVSS 0(SI), X4
	ADDSS X4, X0
	ADDQ  $4, SI
	DECQ  CX
	JNZ   sumtail

sumdone:
	MOVSS X0, ret+24(FP)
	RET

// func sumSqDevSSE(x []float32, mu float32) float32
TEXT ·sumSqDevSSE(SB), NOSPLIT, $0-36
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVSS  mu+24(FP), X8
	SHUFPS $0, X8, X8
	XORPS  X0, X0
	XORPS  X1, X1
	XORPS  X2, X2
	XORPS  X3, X3
	MOVQ   CX, BX
	SHRQ   $4, BX
	JZ     sqfold

sqloop:
	MOVUPS 0(SI), X4
	MOVUPS 16(SI), X5
	MOVUPS 32(SI), X6
	MOVUPS 48(SI), X7
	SUBPS  X8, X4
	SUBPS  X8, X5
	SUBPS  X8, X6
	SUBPS  X8, X7
	MULPS  X4, X4
	MULPS  X5, X5
	MULPS  X6, X6
	MULPS  X7, X7
	ADDPS  X4, X0
	ADDPS  X5, X1
	ADDPS  X6, X2
	ADDPS  X7, X3
	ADDQ   $64, SI
	DECQ   BX
	JNZ    sqloop

sqfold:
	FOLD16(X0, X1, X2, X3, X4)
	ANDQ $15, CX
	JZ   sqdone

sqtail:
	MOVSS 0(SI), X4
	SUBSS X8, X4
	MULSS X4, X4
	ADDSS X4, X0
	ADDQ  $4, SI
	DECQ  CX
	JNZ   sqtail

sqdone:
	MOVSS X0, ret+32(FP)
	RET

// func sumDotSSE(x, y []float32) (sx, sxy float32)
TEXT ·sumDotSSE(SB), NOSPLIT, $0-56
	MOVQ  x_base+0(FP), SI
	MOVQ  x_len+8(FP), CX
	MOVQ  y_base+24(FP), DX
	XORPS X0, X0
	XORPS X1, X1
	XORPS X2, X2
	XORPS X3, X3
	XORPS X8, X8
	XORPS X9, X9
	XORPS X10, X10
	XORPS X11, X11
	MOVQ  CX, BX
	SHRQ  $4, BX
	JZ    dotfold

dotloop:
	MOVUPS 0(SI), X4
	MOVUPS 16(SI), X5
	MOVUPS 32(SI), X6
	MOVUPS 48(SI), X7
	ADDPS  X4, X0
	ADDPS  X5, X1
	ADDPS  X6, X2
	ADDPS  X7, X3
	MOVUPS 0(DX), X12
	MOVUPS 16(DX), X13
	MOVUPS 32(DX), X14
	MOVUPS 48(DX), X15
	MULPS  X4, X12
	MULPS  X5, X13
	MULPS  X6, X14
	MULPS  X7, X15
	ADDPS  X12, X8
	ADDPS  X13, X9
	ADDPS  X14, X10
	ADDPS  X15, X11
	ADDQ   $64, SI
	ADDQ   $64, DX
	DECQ   BX
	JNZ    dotloop

dotfold:
	FOLD16(X0, X1, X2, X3, X4)
	FOLD16(X8, X9, X10, X11, X4)
	ANDQ $15, CX
	JZ   dotdone

dottail:
	MOVSS 0(SI), X4
	MOVSS 0(DX), X5
	ADDSS X4, X0
	MULSS X4, X5
	ADDSS X5, X8
	ADDQ  $4, SI
	ADDQ  $4, DX
	DECQ  CX
	JNZ   dottail

dotdone:
	MOVSS X0, sx+48(FP)
	MOVSS X8, sxy+52(FP)
	RET

// func normalizeSSE(dst, x []float32, mu, inv float32)
TEXT ·normalizeSSE(SB), NOSPLIT, $0-56
	MOVQ   dst_base+0(FP), DI
	MOVQ   dst_len+8(FP), CX
	MOVQ   x_base+24(FP), SI
	MOVSS  mu+48(FP), X6
	SHUFPS $0, X6, X6
	MOVSS  inv+52(FP), X7
	SHUFPS $0, X7, X7
	MOVQ   CX, BX
	SHRQ   $3, BX
	JZ     nrmtail

nrmloop:
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	SUBPS  X6, X0
	SUBPS  X6, X1
	MULPS  X7, X0
	MULPS  X7, X1
	MOVUPS X0, 0(DI)
	MOVUPS X1, 16(DI)
	ADDQ   $32, SI
	ADDQ   $32, DI
	DECQ   BX
	JNZ    nrmloop

nrmtail:
	ANDQ $7, CX
	JZ   nrmdone

nrmloop1:
	MOVSS 0(SI), X0
	SUBSS X6, X0
	MULSS X7, X0
	MOVSS X0, 0(DI)
	ADDQ  $4, SI
	ADDQ  $4, DI
	DECQ  CX
	JNZ   nrmloop1

nrmdone:
	RET

// func normalize2SSE(dst, dst2, x []float32, mu, inv float32)
TEXT ·normalize2SSE(SB), NOSPLIT, $0-80
	MOVQ   dst_base+0(FP), DI
	MOVQ   dst_len+8(FP), CX
	MOVQ   dst2_base+24(FP), DX
	MOVQ   x_base+48(FP), SI
	MOVSS  mu+72(FP), X6
	SHUFPS $0, X6, X6
	MOVSS  inv+76(FP), X7
	SHUFPS $0, X7, X7
	MOVQ   CX, BX
	SHRQ   $3, BX
	JZ     nrm2tail

nrm2loop:
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	SUBPS  X6, X0
	SUBPS  X6, X1
	MULPS  X7, X0
	MULPS  X7, X1
	MOVUPS X0, 0(DI)
	MOVUPS X1, 16(DI)
	MOVUPS X0, 0(DX)
	MOVUPS X1, 16(DX)
	ADDQ   $32, SI
	ADDQ   $32, DI
	ADDQ   $32, DX
	DECQ   BX
	JNZ    nrm2loop

nrm2tail:
	ANDQ $7, CX
	JZ   nrm2done

nrm2loop1:
	MOVSS 0(SI), X0
	SUBSS X6, X0
	MULSS X7, X0
	MOVSS X0, 0(DI)
	MOVSS X0, 0(DX)
	ADDQ  $4, SI
	ADDQ  $4, DI
	ADDQ  $4, DX
	DECQ  CX
	JNZ   nrm2loop1

nrm2done:
	RET

// func affineSSE(dst, x []float32, a, b float32)
TEXT ·affineSSE(SB), NOSPLIT, $0-56
	MOVQ   dst_base+0(FP), DI
	MOVQ   dst_len+8(FP), CX
	MOVQ   x_base+24(FP), SI
	MOVSS  a+48(FP), X6
	SHUFPS $0, X6, X6
	MOVSS  b+52(FP), X7
	SHUFPS $0, X7, X7
	MOVQ   CX, BX
	SHRQ   $3, BX
	JZ     afftail

affloop:
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X1
	MULPS  X6, X0
	MULPS  X6, X1
	ADDPS  X7, X0
	ADDPS  X7, X1
	MOVUPS X0, 0(DI)
	MOVUPS X1, 16(DI)
	ADDQ   $32, SI
	ADDQ   $32, DI
	DECQ   BX
	JNZ    affloop

afftail:
	ANDQ $7, CX
	JZ   affdone

affloop1:
	MOVSS 0(SI), X0
	MULSS X6, X0
	ADDSS X7, X0
	MOVSS X0, 0(DI)
	ADDQ  $4, SI
	ADDQ  $4, DI
	DECQ  CX
	JNZ   affloop1

affdone:
	RET

// func normBackwardSSE(dx, dy, y []float32, a, b, inv float32)
TEXT ·normBackwardSSE(SB), NOSPLIT, $0-84
	MOVQ   dx_base+0(FP), DI
	MOVQ   dx_len+8(FP), CX
	MOVQ   dy_base+24(FP), SI
	MOVQ   y_base+48(FP), DX
	MOVSS  a+72(FP), X5
	SHUFPS $0, X5, X5
	MOVSS  b+76(FP), X6
	SHUFPS $0, X6, X6
	MOVSS  inv+80(FP), X7
	SHUFPS $0, X7, X7
	MOVQ   CX, BX
	SHRQ   $3, BX
	JZ     nbtail

nbloop:
	MOVUPS 0(SI), X0
	MOVUPS 16(SI), X2
	MOVUPS 0(DX), X1
	MOVUPS 16(DX), X3
	SUBPS  X5, X0
	SUBPS  X5, X2
	MULPS  X6, X1
	MULPS  X6, X3
	SUBPS  X1, X0
	SUBPS  X3, X2
	MULPS  X7, X0
	MULPS  X7, X2
	MOVUPS X0, 0(DI)
	MOVUPS X2, 16(DI)
	ADDQ   $32, SI
	ADDQ   $32, DX
	ADDQ   $32, DI
	DECQ   BX
	JNZ    nbloop

nbtail:
	ANDQ $7, CX
	JZ   nbdone

nbloop1:
	MOVSS 0(SI), X0
	MOVSS 0(DX), X1
	SUBSS X5, X0
	MULSS X6, X1
	SUBSS X1, X0
	MULSS X7, X0
	MOVSS X0, 0(DI)
	ADDQ  $4, SI
	ADDQ  $4, DX
	ADDQ  $4, DI
	DECQ  CX
	JNZ   nbloop1

nbdone:
	RET
