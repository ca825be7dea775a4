//go:build !purego

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "gpu.h"
*/
import "C"

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

//go:embed kernels/kernels.ptx
var kernelsPTX string

// The kernels of kernels/kernels.cu, in the order the C side indexes
// them (DSGD_NKERNELS).
const (
	kFill = iota
	kAddScalar
	kReLUFwd
	kReLUBwd
	kMaxPoolFwd
	kMaxPoolBwd
	kAvePoolFwd
	kAvePoolBwd
	kDropoutFwd
	kDropoutBwd
	kChanPart
	kBNGlobal
	kBNStd
	kBNUpdate
	kBNFwd
	kChanFinal
	kBNBwd
	kScaleFwd
	kCopyRows
	kSMLoss
	kSMTotal
	kSMBwd
	kBNFusedFwd
	kBNFusedBwd
	nKernels
)

var kernelNames = [nKernels]string{"dsgd_fill", "dsgd_add_scalar", "dsgd_relu_fwd", "dsgd_relu_bwd",
	"dsgd_maxpool_fwd", "dsgd_maxpool_bwd", "dsgd_avepool_fwd", "dsgd_avepool_bwd", "dsgd_dropout_fwd",
	"dsgd_dropout_bwd", "dsgd_chan_part", "dsgd_bn_global", "dsgd_bn_std", "dsgd_bn_update", "dsgd_bn_fwd",
	"dsgd_chan_final", "dsgd_bn_bwd", "dsgd_scale_fwd", "dsgd_copy_rows",
	"dsgd_sm_loss", "dsgd_sm_total", "dsgd_sm_bwd", "dsgd_bn_fused_fwd", "dsgd_bn_fused_bwd"}

// GPU is one device opened for computing: its primary context, a cuBLAS
// and a cuDNN handle in fp32 math (TF32 only when asked), the kernels
// loaded, and a workspace for cuDNN. Its methods may be called from any
// goroutine, one at a time; they queue work in order on the GPU's
// default stream and return (Sync waits for it).
type GPU struct {
	Device
	// TF32 says whether cuBLAS and cuDNN may use TF32 tensor cores for
	// float32 products.
	TF32 bool
	g    *C.dsgd_gpu
	mu   sync.Mutex
	// args holds a launch's argument values and argp points at each
	// (cuLaunchKernel's kernelParams), in C memory made once by Open:
	// cgo forbids Go pointers to Go pointers, and a launch allocates
	// nothing. mu guards them.
	args *[maxArgs]uint64
	argp *[maxArgs]unsafe.Pointer
}

// Buffer is float32 memory on a GPU.
type Buffer struct {
	g *GPU
	// Ptr is its device address.
	Ptr Ptr
	n   int
}

// gpuError turns a status of the C side (gpu.h) into an error naming the
// call and what the status means.
func (g *GPU) err(what string, r C.int) error {
	if r == 0 {
		return nil
	}
	code := int(r)
	name := ""
	if g != nil && g.g != nil {
		name = C.GoString(C.dsgd_gpu_errname(g.g, r))
	}
	if name != "" {
		name = " (" + name + ")"
	}
	switch {
	case code >= 3000:
		return fmt.Errorf("cuda: %s: an entry point the GPU engine needs is missing%s: the CUDA driver, cuBLAS or cuDNN (dsgd needs 8 or 9) that has no such function is too old; update it, or point DSGD_CUDA_LIBS at a newer one", what, name)
	case code >= 2000:
		return fmt.Errorf("cuda: %s: cuDNN status %d%s", what, code-2000, name)
	case code >= 1000:
		return fmt.Errorf("cuda: %s: cuBLAS status %d", what, code-1000)
	case code == 2:
		return fmt.Errorf("cuda: %s: out of GPU memory (CUDA error 2)", what)
	}
	return fmt.Errorf("cuda: %s: CUDA error %d%s", what, code, name)
}

// Open opens GPU index for computing; tf32 lets cuBLAS and cuDNN use TF32
// tensor cores for float32 products (off: fp32 throughout). cuDNN is
// optional here (a GPU without it runs GEMMs and kernels); Conv and LRN
// say when it is missing.
func Open(index int, tf32 bool) (*GPU, error) {
	in, err := Probe()
	if err != nil {
		return nil, err
	}
	if _, err := ParseIDs(fmt.Sprint(index), len(in.Devices)); err != nil {
		return nil, err
	}
	if libcublas == nil {
		return nil, fmt.Errorf("cuda: cuBLAS %s", in.CUBLAS)
	}
	g := &GPU{Device: in.Devices[index], TF32: tf32, g: (*C.dsgd_gpu)(C.calloc(1, C.sizeof_dsgd_gpu))}
	ptx := C.CString(kernelsPTX)
	defer C.free(unsafe.Pointer(ptx))
	names := make([]*C.char, nKernels)
	for i, n := range kernelNames {
		names[i] = C.CString(n)
		defer C.free(unsafe.Pointer(names[i]))
	}
	cnames := (**C.char)(C.malloc(C.size_t(nKernels) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(cnames))
	copy(unsafe.Slice(cnames, nKernels), names)
	if r := C.dsgd_gpu_init(g.g, libcuda, libcublas, libcudnn, C.int(index), C.int(b2i(tf32)), ptx, cnames); r != 0 {
		err := g.err(fmt.Sprintf("opening GPU %d", index), r)
		C.free(unsafe.Pointer(g.g))
		return nil, err
	}
	g.args = (*[maxArgs]uint64)(C.calloc(maxArgs, 8))
	g.argp = (*[maxArgs]unsafe.Pointer)(C.calloc(maxArgs, C.size_t(unsafe.Sizeof(uintptr(0)))))
	for i := range g.argp {
		g.argp[i] = unsafe.Pointer(&g.args[i])
	}
	return g, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// HasDNN reports whether cuDNN was loaded (convolutions and LRN need it).
func (g *GPU) HasDNN() bool { return g.g.dnn != nil }

// Close waits for the GPU's work and releases what Open made.
func (g *GPU) Close() error {
	if g.g == nil {
		return nil
	}
	err := g.err("closing the GPU", C.dsgd_gpu_close(g.g))
	C.free(unsafe.Pointer(g.g))
	C.free(unsafe.Pointer(g.args))
	C.free(unsafe.Pointer(g.argp))
	g.g, g.args, g.argp = nil, nil, nil
	return err
}

// MemInfo returns the device memory free and in all, in bytes.
func (g *GPU) MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	if r := C.dsgd_meminfo(g.g, &f, &t); r != 0 {
		return 0, 0, g.err("cuMemGetInfo", r)
	}
	return int64(f), int64(t), nil
}

// Malloc allocates n float32s on the GPU and returns their address.
func (g *GPU) Malloc(n int) (Ptr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: allocating %d floats", n)
	}
	var p C.devptr
	if r := C.dsgd_alloc(g.g, &p, C.size_t(4*n)); r != 0 {
		err := fmt.Errorf("%w: %d MiB asked of %s", g.err("cuMemAlloc", r), (4*int64(n)+(1<<20)-1)>>20, g.Name)
		if r == 2 { // CUDA_ERROR_OUT_OF_MEMORY
			free, total, _ := g.MemInfo()
			err = fmt.Errorf("%w, which has %d MiB free of %d: use a smaller batch, fewer workers on this GPU, or more GPUs (--gpu 0,1)", err, free>>20, total>>20)
		}
		return 0, err
	}
	return Ptr(p), nil
}

// MFree frees memory Malloc returned.
func (g *GPU) MFree(p Ptr) error { return g.err("cuMemFree", C.dsgd_free(g.g, C.devptr(p))) }

// ToDevice copies src to dst, waiting until src may be reused.
func (g *GPU) ToDevice(dst Ptr, src []float32) error {
	if len(src) == 0 {
		return nil
	}
	r := C.dsgd_htod(g.g, C.devptr(dst), unsafe.Pointer(&src[0]), C.size_t(4*len(src)))
	runtime.KeepAlive(src)
	return g.err("cuMemcpyHtoD", r)
}

// ToHost copies len(dst) floats from src into dst once the work queued
// before has finished.
func (g *GPU) ToHost(dst []float32, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	r := C.dsgd_dtoh(g.g, unsafe.Pointer(&dst[0]), C.devptr(src), C.size_t(4*len(dst)))
	runtime.KeepAlive(dst)
	return g.err("cuMemcpyDtoH", r)
}

// Copy copies n floats from src to dst on the GPU.
func (g *GPU) Copy(dst, src Ptr, n int) error {
	if n == 0 || dst == src {
		return nil
	}
	return g.err("cuMemcpyDtoD", C.dsgd_dtod(g.g, C.devptr(dst), C.devptr(src), C.size_t(4*n)))
}

// Fill sets n floats at dst to v.
func (g *GPU) Fill(dst Ptr, n int, v float32) error {
	if n == 0 {
		return nil
	}
	return g.err("cuMemsetD32", C.dsgd_memset32(g.g, C.devptr(dst), C.uint(math.Float32bits(v)), C.size_t(n)))
}

// Sync waits for the work queued on the GPU.
func (g *GPU) Sync() error { return g.err("cuCtxSynchronize", C.dsgd_sync(g.g)) }

// Gemm computes row-major C (m×n) = alpha·op(A)·op(B) + beta·C, op(X)
// being Xᵀ when its flag is set; lda, ldb and ldc are the matrices' row
// strides as stored.
func (g *GPU) Gemm(ta, tb bool, m, n, k int, alpha float32, a Ptr, lda int, b Ptr, ldb int, beta float32, c Ptr, ldc int) error {
	return g.err("cublasSgemm", C.dsgd_gemm(g.g, C.int(b2i(ta)), C.int(b2i(tb)), C.int(m), C.int(n), C.int(k), C.float(alpha),
		C.devptr(a), C.int(lda), C.devptr(b), C.int(ldb), C.float(beta), C.devptr(c), C.int(ldc)))
}

// Gemv computes y = alpha·op(A)·x + beta·y for the row-major m×n A.
func (g *GPU) Gemv(ta bool, m, n int, alpha float32, a, x Ptr, beta float32, y Ptr) error {
	return g.err("cublasSgemv", C.dsgd_gemv(g.g, C.int(b2i(ta)), C.int(m), C.int(n), C.float(alpha), C.devptr(a), C.devptr(x), C.float(beta), C.devptr(y)))
}

// Axpy computes y += alpha·x over n floats.
func (g *GPU) Axpy(n int, alpha float32, x, y Ptr) error {
	return g.err("cublasSaxpy", C.dsgd_axpy(g.g, C.int(n), C.float(alpha), C.devptr(x), C.devptr(y)))
}

// Scal computes x *= alpha over n floats.
func (g *GPU) Scal(n int, alpha float32, x Ptr) error {
	return g.err("cublasSscal", C.dsgd_scal(g.g, C.int(n), C.float(alpha), C.devptr(x)))
}

// Ones returns a device vector of at least n ones (bias products).
func (g *GPU) Ones(n int) (Ptr, error) {
	if r := C.dsgd_ensure_ones(g.g, C.size_t(n)); r != 0 {
		return 0, g.err("a vector of ones", r)
	}
	return Ptr(g.g.ones), nil
}

// launch runs kernel k over n elements (or one block per channel when
// channels > 0) with the given arguments, each an int, uint32, float32 or
// Ptr.
func (g *GPU) launch(k int, n, channels int, args ...any) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := packArgs(g.args, args); err != nil {
		return fmt.Errorf("cuda: kernel %s: %w", kernelNames[k], err)
	}
	return g.err(kernelNames[k], C.dsgd_launch(g.g, C.int(k), C.int(n), C.int(channels), &g.argp[0]))
}

// errNoDNN is what cuDNN's users return without it.
var errNoDNN = errors.New("cuda: cuDNN was not found (libcudnn.so.9 or .8 in DSGD_CUDA_LIBS, the NVIDIA wheels' nvidia/cudnn/lib, or the CUDA toolkit)")
