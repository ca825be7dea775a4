// The GPU engine's C side: the CUDA driver, cuBLAS and cuDNN entry points
// it calls, looked up once by name in the libraries Probe opened (no CUDA
// header or library is needed to build dsgd), and the operations the Go
// side calls, one cgo call each. Every function returns 0 or a status:
// below 1000 the driver's (CUresult), 1000 + cuBLAS's, 2000 + cuDNN's,
// 3000 + a missing entry point's index.

#include <stddef.h>

typedef unsigned long long devptr;

enum { DSGD_NKERNELS = 24 };

typedef struct dsgd_gpu {
	void *cu, *blas, *dnn; // the libraries
	void *ctx;
	int dev, tf32;
	int fastest; // cuDNN's fastest algorithm even where it is not deterministic
	const char *missing; // the entry point a status of 3000 and up did not find
	void *blas_h, *dnn_h;
	void *module;
	void *kern[DSGD_NKERNELS];
	devptr ws;      // the cuDNN workspace
	size_t ws_size; // its size in bytes
	devptr ones;    // a vector of ones (bias products)
	size_t ones_n;
	// the driver
	int (*ctxSetCurrent)(void *);
	int (*ctxSynchronize)(void);
	int (*memAlloc)(devptr *, size_t);
	int (*memFree)(devptr);
	int (*htod)(devptr, const void *, size_t);
	int (*dtoh)(void *, devptr, size_t);
	int (*dtod)(devptr, devptr, size_t);
	int (*memsetD32)(devptr, unsigned, size_t);
	int (*memGetInfo)(size_t *, size_t *);
	int (*moduleLoadData)(void **, const void *);
	int (*moduleGetFunction)(void **, void *, const char *);
	int (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
	int (*getErrorName)(int, const char **);
	// cuBLAS
	int (*sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int, const float *, float *, int);
	int (*sgemv)(void *, int, int, int, const float *, const float *, int, const float *, int, const float *, float *, int);
	int (*saxpy)(void *, int, const float *, const float *, int, float *, int);
	int (*sscal)(void *, int, const float *, float *, int);
	// cuDNN
	const char *(*dnnErr)(int);
	int (*createTensor)(void **);
	int (*setTensor4d)(void *, int, int, int, int, int, int);
	int (*destroyTensor)(void *);
	int (*createFilter)(void **);
	int (*setFilter4d)(void *, int, int, int, int, int, int);
	int (*destroyFilter)(void *);
	int (*createConv)(void **);
	int (*setConv2d)(void *, int, int, int, int, int, int, int, int);
	int (*setConvGroups)(void *, int);
	int (*setConvMath)(void *, int);
	int (*destroyConv)(void *);
	int (*findFwd)(void *, void *, void *, void *, void *, int, int *, void *);
	int (*findBwdData)(void *, void *, void *, void *, void *, int, int *, void *);
	int (*findBwdFilter)(void *, void *, void *, void *, void *, int, int *, void *);
	int (*convFwd)(void *, const void *, void *, devptr, void *, devptr, void *, int, devptr, size_t, const void *, void *, devptr);
	int (*convBwdData)(void *, const void *, void *, devptr, void *, devptr, void *, int, devptr, size_t, const void *, void *, devptr);
	int (*convBwdFilter)(void *, const void *, void *, devptr, void *, devptr, void *, int, devptr, size_t, const void *, void *, devptr);
	int (*convBwdBias)(void *, const void *, void *, devptr, const void *, void *, devptr);
	int (*addTensor)(void *, const void *, void *, devptr, const void *, void *, devptr);
	int (*createLRN)(void **);
	int (*setLRN)(void *, unsigned, double, double, double);
	int (*destroyLRN)(void *);
	int (*lrnFwd)(void *, void *, int, const void *, void *, devptr, const void *, void *, devptr);
	int (*lrnBwd)(void *, void *, int, const void *, void *, devptr, void *, devptr, void *, devptr, const void *, void *, devptr);
	int (*softmaxFwd)(void *, int, int, const void *, void *, devptr, const void *, void *, devptr);
} dsgd_gpu;

int dsgd_gpu_init(dsgd_gpu *g, void *cu, void *blas, void *dnn, int dev, int tf32, const char *ptx, const char **kernels);
int dsgd_gpu_close(dsgd_gpu *g);
const char *dsgd_gpu_errname(dsgd_gpu *g, int r);

int dsgd_alloc(dsgd_gpu *g, devptr *p, size_t bytes);
int dsgd_free(dsgd_gpu *g, devptr p);
int dsgd_htod(dsgd_gpu *g, devptr dst, const void *src, size_t bytes);
int dsgd_dtoh(dsgd_gpu *g, void *dst, devptr src, size_t bytes);
int dsgd_dtod(dsgd_gpu *g, devptr dst, devptr src, size_t bytes);
int dsgd_memset32(dsgd_gpu *g, devptr dst, unsigned v, size_t n);
int dsgd_sync(dsgd_gpu *g);
int dsgd_meminfo(dsgd_gpu *g, size_t *free, size_t *total);
int dsgd_ensure_ws(dsgd_gpu *g, size_t bytes);
int dsgd_ensure_ones(dsgd_gpu *g, size_t n);

// launch runs kernel k over a grid covering n threads (one block per
// channel when channels > 0) with its arguments' addresses.
int dsgd_launch(dsgd_gpu *g, int k, int n, int channels, void **args);

// Row-major GEMM: C (m×n) = alpha·op(A)·op(B) + beta·C, op transposing
// when ta/tb; lda, ldb, ldc are the row strides.
int dsgd_gemm(dsgd_gpu *g, int ta, int tb, int m, int n, int k, float alpha, devptr a, int lda, devptr b, int ldb, float beta, devptr c, int ldc);
// Row-major GEMV: y (m or n) = alpha·op(A)·x + beta·y for A m×n.
int dsgd_gemv(dsgd_gpu *g, int ta, int m, int n, float alpha, devptr a, devptr x, float beta, devptr y);
int dsgd_axpy(dsgd_gpu *g, int n, float alpha, devptr x, devptr y);
int dsgd_scal(dsgd_gpu *g, int n, float alpha, devptr x);

// A convolution's cuDNN state and the algorithms chosen for it.
typedef struct dsgd_conv {
	void *x, *y, *w, *b, *conv;
	int fwd, bwd_data, bwd_filter;
	size_t ws_fwd, ws_bwd_data, ws_bwd_filter;
	float ms_fwd, ms_bwd_data, ms_bwd_filter;
	// with tf32, the math type each chosen algorithm was measured in
	int math_fwd, math_bwd_data, math_bwd_filter;
} dsgd_conv;

int dsgd_conv_setup(dsgd_gpu *g, dsgd_conv *c, const int *geom, size_t ws_limit);
int dsgd_conv_destroy(dsgd_gpu *g, dsgd_conv *c);
int dsgd_conv_fwd(dsgd_gpu *g, dsgd_conv *c, devptr x, devptr w, devptr b, devptr y);
int dsgd_conv_bwd(dsgd_gpu *g, dsgd_conv *c, devptr x, devptr w, devptr dy, devptr dx, devptr dw, devptr db);

// LRN across channels through cuDNN.
typedef struct dsgd_lrn {
	void *x, *lrn;
} dsgd_lrn;

int dsgd_lrn_setup(dsgd_gpu *g, dsgd_lrn *l, int n, int c, int h, int w, int size, double alpha, double beta, double k);
int dsgd_lrn_destroy(dsgd_gpu *g, dsgd_lrn *l);
int dsgd_lrn_fwd(dsgd_gpu *g, dsgd_lrn *l, devptr x, devptr y);
int dsgd_lrn_bwd(dsgd_gpu *g, dsgd_lrn *l, devptr x, devptr y, devptr dy, devptr dx);

// A softmax over the channels of an outer×channels×inner blob (cuDNN's
// accurate one); desc is its tensor descriptor.
int dsgd_softmax_setup(dsgd_gpu *g, void **desc, int outer, int channels, int inner);
int dsgd_softmax_destroy(dsgd_gpu *g, void *desc);
int dsgd_softmax_fwd(dsgd_gpu *g, void *desc, devptr x, devptr y);
