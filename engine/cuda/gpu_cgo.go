//go:build !purego

package cuda

/*
#include <dlfcn.h>
#include <stddef.h>

typedef unsigned long long devptr;

// Each call makes the GPU's context current on the calling thread first
// (a goroutine may move between threads between two calls), then calls
// the entry point looked up by name. CUDA and cuBLAS return 0 on success.
typedef int (*ctx_retain_fn)(void **, int);
typedef int (*ctx_release_fn)(int);
typedef int (*ctx_set_fn)(void *);
typedef int (*void_fn)(void);
typedef int (*alloc_fn)(devptr *, size_t);
typedef int (*free_fn)(devptr);
typedef int (*htod_fn)(devptr, const void *, size_t);
typedef int (*dtoh_fn)(void *, devptr, size_t);
typedef int (*blas_create_fn)(void **);
typedef int (*blas_destroy_fn)(void *);
typedef int (*blas_mode_fn)(void *, int);
typedef int (*sgemm_fn)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int, const float *, float *, int);

static void *f(void *h, const char *name) { return dlsym(h, name); }

static int dsgd_gpu_open(void *cu, int dev, void **ctx) {
	int r = ((ctx_retain_fn)f(cu, "cuDevicePrimaryCtxRetain"))(ctx, dev);
	if (r) return r;
	return ((ctx_set_fn)f(cu, "cuCtxSetCurrent"))(*ctx);
}
static int dsgd_gpu_release(void *cu, int dev) { return ((ctx_release_fn)f(cu, "cuDevicePrimaryCtxRelease"))(dev); }
static int cur(void *cu, void *ctx) { return ((ctx_set_fn)f(cu, "cuCtxSetCurrent"))(ctx); }

static int dsgd_gpu_alloc(void *cu, void *ctx, devptr *p, size_t n) {
	int r = cur(cu, ctx);
	return r ? r : ((alloc_fn)f(cu, "cuMemAlloc_v2"))(p, n);
}
static int dsgd_gpu_free(void *cu, void *ctx, devptr p) {
	int r = cur(cu, ctx);
	return r ? r : ((free_fn)f(cu, "cuMemFree_v2"))(p);
}
static int dsgd_gpu_upload(void *cu, void *ctx, devptr dst, const void *src, size_t n) {
	int r = cur(cu, ctx);
	return r ? r : ((htod_fn)f(cu, "cuMemcpyHtoD_v2"))(dst, src, n);
}
static int dsgd_gpu_download(void *cu, void *ctx, void *dst, devptr src, size_t n) {
	int r = cur(cu, ctx);
	return r ? r : ((dtoh_fn)f(cu, "cuMemcpyDtoH_v2"))(dst, src, n);
}
static int dsgd_gpu_sync(void *cu, void *ctx) {
	int r = cur(cu, ctx);
	return r ? r : ((void_fn)f(cu, "cuCtxSynchronize"))();
}

// dsgd_blas_create makes a cuBLAS handle in fp32 math (CUBLAS_DEFAULT_MATH
// is 0; TF32 tensor cores are mode 3, only when asked).
static int dsgd_blas_create(void *cu, void *ctx, void *blas, void **h, int tf32) {
	int r = cur(cu, ctx);
	if (r) return r;
	if ((r = ((blas_create_fn)f(blas, "cublasCreate_v2"))(h))) return 1000 + r;
	if ((r = ((blas_mode_fn)f(blas, "cublasSetMathMode"))(*h, tf32 ? 3 : 0))) return 1000 + r;
	return 0;
}
static int dsgd_blas_destroy(void *cu, void *ctx, void *blas, void *h) {
	int r = cur(cu, ctx);
	return r ? r : ((blas_destroy_fn)f(blas, "cublasDestroy_v2"))(h);
}

// dsgd_sgemm computes row-major C (m×n) = alpha·A (m×k)·B (k×n) + beta·C as
// the column-major Cᵀ = Bᵀ·Aᵀ cuBLAS computes (CUBLAS_OP_N is 0).
static int dsgd_sgemm(void *cu, void *ctx, void *blas, void *h, int m, int n, int k, float alpha, devptr a, devptr b, float beta, devptr c) {
	int r = cur(cu, ctx);
	if (r) return r;
	r = ((sgemm_fn)f(blas, "cublasSgemm_v2"))(h, 0, 0, n, m, k, &alpha, (const float *)b, n, (const float *)a, k, &beta, (float *)c, n);
	return r ? 1000 + r : 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// GPU is one device opened for computing: its primary context and a
// cuBLAS handle in fp32 math. Its methods may be called from any
// goroutine, one at a time.
type GPU struct {
	Device
	ctx  unsafe.Pointer
	blas unsafe.Pointer
}

// Buffer is float32 memory on a GPU.
type Buffer struct {
	g   *GPU
	ptr C.devptr
	n   int
}

// cudaError turns a CUDA (or, from 1000, cuBLAS) status into an error
// naming the call.
func cudaError(what string, r C.int) error {
	if r == 0 {
		return nil
	}
	if r >= 1000 {
		return fmt.Errorf("cuda: %s: cuBLAS status %d", what, int(r)-1000)
	}
	return fmt.Errorf("cuda: %s: CUDA error %d", what, int(r))
}

// Open opens GPU index for computing; tf32 lets cuBLAS use TF32 tensor
// cores for float32 products (off: fp32 throughout).
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
	g := &GPU{Device: in.Devices[index]}
	if r := C.dsgd_gpu_open(libcuda, C.int(index), &g.ctx); r != 0 {
		return nil, cudaError(fmt.Sprintf("GPU %d's context", index), r)
	}
	if r := C.dsgd_blas_create(libcuda, g.ctx, libcublas, &g.blas, C.int(b2i(tf32))); r != 0 {
		C.dsgd_gpu_release(libcuda, C.int(index))
		return nil, cudaError("cublasCreate", r)
	}
	return g, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Close releases the cuBLAS handle and the context.
func (g *GPU) Close() error {
	err := cudaError("cublasDestroy", C.dsgd_blas_destroy(libcuda, g.ctx, libcublas, g.blas))
	return errors.Join(err, cudaError("releasing the context", C.dsgd_gpu_release(libcuda, C.int(g.Index))))
}

// Alloc allocates n float32s on the GPU.
func (g *GPU) Alloc(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: allocating %d floats", n)
	}
	b := &Buffer{g: g, n: n}
	if r := C.dsgd_gpu_alloc(libcuda, g.ctx, &b.ptr, C.size_t(4*n)); r != 0 {
		return nil, fmt.Errorf("%w (%d MiB asked of %s)", cudaError("cuMemAlloc", r), 4*n>>20, g.Name)
	}
	return b, nil
}

// Len is the buffer's length in float32s.
func (b *Buffer) Len() int { return b.n }

// Free frees the buffer.
func (b *Buffer) Free() error {
	return cudaError("cuMemFree", C.dsgd_gpu_free(libcuda, b.g.ctx, b.ptr))
}

// Upload copies src (at most Len floats) to the buffer's start.
func (b *Buffer) Upload(src []float32) error {
	if len(src) > b.n {
		return fmt.Errorf("cuda: uploading %d floats into %d", len(src), b.n)
	}
	if len(src) == 0 {
		return nil
	}
	return cudaError("cuMemcpyHtoD", C.dsgd_gpu_upload(libcuda, b.g.ctx, b.ptr, unsafe.Pointer(&src[0]), C.size_t(4*len(src))))
}

// Download copies the buffer's first len(dst) floats into dst.
func (b *Buffer) Download(dst []float32) error {
	if len(dst) > b.n {
		return fmt.Errorf("cuda: downloading %d floats from %d", len(dst), b.n)
	}
	if len(dst) == 0 {
		return nil
	}
	return cudaError("cuMemcpyDtoH", C.dsgd_gpu_download(libcuda, b.g.ctx, unsafe.Pointer(&dst[0]), b.ptr, C.size_t(4*len(dst))))
}

// Sgemm computes row-major C (m×n) = alpha·A (m×k)·B (k×n) + beta·C on the
// GPU, as tensor's GEMM does on the CPU; it returns once it is queued
// (Sync waits).
func (g *GPU) Sgemm(m, n, k int, alpha float32, a, b *Buffer, beta float32, c *Buffer) error {
	if m <= 0 || n <= 0 || k <= 0 || a.n < m*k || b.n < k*n || c.n < m*n {
		return fmt.Errorf("cuda: Sgemm %d×%d×%d with buffers of %d, %d and %d floats", m, n, k, a.n, b.n, c.n)
	}
	return cudaError("cublasSgemm", C.dsgd_sgemm(libcuda, g.ctx, libcublas, g.blas, C.int(m), C.int(n), C.int(k), C.float(alpha), a.ptr, b.ptr, C.float(beta), c.ptr))
}

// Sync waits for the work queued on the GPU.
func (g *GPU) Sync() error { return cudaError("cuCtxSynchronize", C.dsgd_gpu_sync(libcuda, g.ctx)) }
