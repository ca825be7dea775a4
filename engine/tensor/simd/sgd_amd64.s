//go:build amd64 && !purego

#include "textflag.h"

// func sgdL2SSE(w, g, v []float32, scale, decay, lr, mom float32)
//
// For each i: gi = g·scale + decay·w; v = mom·v + lr·gi; w = w − v, every
// product and sum rounded on its own (MULPS/ADDPS/SUBPS: IEEE single
// precision, bitwise the scalar loop), four lanes at a time, then one.
TEXT ·sgdL2SSE(SB), NOSPLIT, $0-88
	MOVQ   w_base+0(FP), DI
	MOVQ   w_len+8(FP), CX
	MOVQ   g_base+24(FP), SI
	MOVQ   v_base+48(FP), DX
	MOVSS  scale+72(FP), X8
	SHUFPS $0, X8, X8
	MOVSS  decay+76(FP), X9
	SHUFPS $0, X9, X9
	MOVSS  lr+80(FP), X10
	SHUFPS $0, X10, X10
	MOVSS  mom+84(FP), X11
	SHUFPS $0, X11, X11
	MOVQ   CX, BX
	SHRQ   $2, BX
	JZ     l2tail

l2loop4:
	MOVUPS 0(SI), X0
	MULPS  X8, X0
	MOVUPS 0(DI), X1
	MOVAPS X1, X2
	MULPS  X9, X2
	ADDPS  X2, X0
	MULPS  X10, X0
	MOVUPS 0(DX), X3
	MULPS  X11, X3
	ADDPS  X0, X3
	MOVUPS X3, 0(DX)
	SUBPS  X3, X1
	MOVUPS X1, 0(DI)
	ADDQ   $16, DI
	ADDQ   $16, SI
	ADDQ   $16, DX
	DECQ   BX
	JNZ    l2loop4

l2tail:
	ANDQ $3, CX
	JZ   l2done

l2loop1:
	MOVSS  0(SI), X0
	MULSS  X8, X0
	MOVSS  0(DI), X1
	MOVAPS X1, X2
	MULSS  X9, X2
	ADDSS  X2, X0
	MULSS  X10, X0
	MOVSS  0(DX), X3
	MULSS  X11, X3
	ADDSS  X0, X3
	MOVSS  X3, 0(DX)
	SUBSS  X3, X1
	MOVSS  X1, 0(DI)
	ADDQ   $4, DI
	ADDQ   $4, SI
	ADDQ   $4, DX
	DECQ   CX
	JNZ    l2loop1

l2done:
	RET

// func sgdSSE(w, g, v []float32, scale, lr, mom float32)
//
// sgdL2SSE without the decay term.
TEXT ·sgdSSE(SB), NOSPLIT, $0-84
	MOVQ   w_base+0(FP), DI
	MOVQ   w_len+8(FP), CX
	MOVQ   g_base+24(FP), SI
	MOVQ   v_base+48(FP), DX
	MOVSS  scale+72(FP), X8
	SHUFPS $0, X8, X8
	MOVSS  lr+76(FP), X10
	SHUFPS $0, X10, X10
	MOVSS  mom+80(FP), X11
	SHUFPS $0, X11, X11
	MOVQ   CX, BX
	SHRQ   $2, BX
	JZ     tail

loop4:
	MOVUPS 0(SI), X0
	MULPS  X8, X0
	MULPS  X10, X0
	MOVUPS 0(DX), X3
	MULPS  X11, X3
	ADDPS  X0, X3
	MOVUPS X3, 0(DX)
	MOVUPS 0(DI), X1
	SUBPS  X3, X1
	MOVUPS X1, 0(DI)
	ADDQ   $16, DI
	ADDQ   $16, SI
	ADDQ   $16, DX
	DECQ   BX
	JNZ    loop4

tail:
	ANDQ $3, CX
	JZ   done

loop1:
	MOVSS 0(SI), X0
	MULSS X8, X0
	MULSS X10, X0
	MOVSS 0(DX), X3
	MULSS X11, X3
	ADDSS X0, X3
	MOVSS X3, 0(DX)
	MOVSS 0(DI), X1
	SUBSS X3, X1
	MOVSS X1, 0(DI)
	ADDQ  $4, DI
	ADDQ  $4, SI
	ADDQ  $4, DX
	DECQ  CX
	JNZ   loop1

done:
	RET
