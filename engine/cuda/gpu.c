//go:build !purego

#include <dlfcn.h>
#include <string.h>
#include "gpu.h"

#define DRV(r) do { int _r = (r); if (_r) return _r; } while (0)
#define BLAS(r) do { int _r = (r); if (_r) return 1000 + _r; } while (0)
#define DNN(r) do { int _r = (r); if (_r) return 2000 + _r; } while (0)
#define CUR(g) DRV((g)->ctxSetCurrent((g)->ctx))

// bind looks up each named entry point into its slot, recording the
// first it does not find in g->missing.
static int bind(dsgd_gpu *g, void *h, const char *const *names, void **slots[], int n, int base) {
	for (int i = 0; i < n; i++) {
		*slots[i] = dlsym(h, names[i]);
		if (!*slots[i]) {
			g->missing = names[i];
			return base + i;
		}
	}
	return 0;
}

#define S(x) (void **)&g->x

int dsgd_gpu_init(dsgd_gpu *g, void *cu, void *blas, void *dnn, int dev, int tf32, const char *ptx, const char **kernels) {
	memset(g, 0, sizeof *g);
	g->cu = cu, g->blas = blas, g->dnn = dnn, g->dev = dev, g->tf32 = tf32;
	static const char *const drv[] = {"cuCtxSetCurrent", "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2",
		"cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemsetD32_v2", "cuMemGetInfo_v2",
		"cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuGetErrorName"};
	void **drvs[] = {S(ctxSetCurrent), S(ctxSynchronize), S(memAlloc), S(memFree), S(htod), S(dtoh), S(dtod),
		S(memsetD32), S(memGetInfo), S(moduleLoadData), S(moduleGetFunction), S(launch), S(getErrorName)};
	int r = bind(g, cu, drv, drvs, 13, 3000);
	if (r) return r;
	static const char *const bl[] = {"cublasSgemm_v2", "cublasSgemv_v2", "cublasSaxpy_v2", "cublasSscal_v2"};
	void **bls[] = {S(sgemm), S(sgemv), S(saxpy), S(sscal)};
	if ((r = bind(g, blas, bl, bls, 4, 3100))) return r;
	if (dnn) {
		static const char *const dn[] = {"cudnnGetErrorString", "cudnnCreateTensorDescriptor", "cudnnSetTensor4dDescriptor",
			"cudnnDestroyTensorDescriptor", "cudnnCreateFilterDescriptor", "cudnnSetFilter4dDescriptor",
			"cudnnDestroyFilterDescriptor", "cudnnCreateConvolutionDescriptor", "cudnnSetConvolution2dDescriptor",
			"cudnnSetConvolutionGroupCount", "cudnnSetConvolutionMathType", "cudnnDestroyConvolutionDescriptor",
			"cudnnFindConvolutionForwardAlgorithm", "cudnnFindConvolutionBackwardDataAlgorithm",
			"cudnnFindConvolutionBackwardFilterAlgorithm", "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
			"cudnnConvolutionBackwardFilter", "cudnnConvolutionBackwardBias", "cudnnAddTensor",
			"cudnnCreateLRNDescriptor", "cudnnSetLRNDescriptor", "cudnnDestroyLRNDescriptor",
			"cudnnLRNCrossChannelForward", "cudnnLRNCrossChannelBackward", "cudnnSoftmaxForward"};
		void **dns[] = {S(dnnErr), S(createTensor), S(setTensor4d), S(destroyTensor), S(createFilter), S(setFilter4d),
			S(destroyFilter), S(createConv), S(setConv2d), S(setConvGroups), S(setConvMath), S(destroyConv),
			S(findFwd), S(findBwdData), S(findBwdFilter), S(convFwd), S(convBwdData), S(convBwdFilter),
			S(convBwdBias), S(addTensor), S(createLRN), S(setLRN), S(destroyLRN), S(lrnFwd), S(lrnBwd), S(softmaxFwd)};
		if ((r = bind(g, dnn, dn, dns, 26, 3200))) return r;
	}
	int (*retain)(void **, int) = (int (*)(void **, int))dlsym(cu, "cuDevicePrimaryCtxRetain");
	if (!retain) return g->missing = "cuDevicePrimaryCtxRetain", 3300;
	DRV(retain(&g->ctx, dev));
	CUR(g);
	int (*bcreate)(void **) = (int (*)(void **))dlsym(blas, "cublasCreate_v2");
	int (*bmode)(void *, int) = (int (*)(void *, int))dlsym(blas, "cublasSetMathMode");
	if (!bcreate || !bmode) return g->missing = "cublasCreate_v2 or cublasSetMathMode", 3301;
	BLAS(bcreate(&g->blas_h));
	// CUBLAS_DEFAULT_MATH (0) is fp32; CUBLAS_TF32_TENSOR_OP_MATH is 3.
	BLAS(bmode(g->blas_h, tf32 ? 3 : 0));
	if (dnn) {
		int (*dcreate)(void **) = (int (*)(void **))dlsym(dnn, "cudnnCreate");
		if (!dcreate) return g->missing = "cudnnCreate", 3302;
		DNN(dcreate(&g->dnn_h));
	}
	DRV(g->moduleLoadData(&g->module, ptx));
	for (int i = 0; i < DSGD_NKERNELS; i++) DRV(g->moduleGetFunction(&g->kern[i], g->module, kernels[i]));
	return 0;
}

int dsgd_gpu_close(dsgd_gpu *g) {
	CUR(g);
	DRV(g->ctxSynchronize());
	if (g->ws) DRV(g->memFree(g->ws));
	if (g->ones) DRV(g->memFree(g->ones));
	g->ws = g->ones = 0;
	if (g->dnn_h) {
		int (*d)(void *) = (int (*)(void *))dlsym(g->dnn, "cudnnDestroy");
		if (d) DNN(d(g->dnn_h));
	}
	int (*bd)(void *) = (int (*)(void *))dlsym(g->blas, "cublasDestroy_v2");
	if (bd) BLAS(bd(g->blas_h));
	int (*unload)(void *) = (int (*)(void *))dlsym(g->cu, "cuModuleUnload");
	if (unload && g->module) DRV(unload(g->module));
	int (*release)(int) = (int (*)(int))dlsym(g->cu, "cuDevicePrimaryCtxRelease_v2");
	if (!release) release = (int (*)(int))dlsym(g->cu, "cuDevicePrimaryCtxRelease");
	return release ? release(g->dev) : 0;
}

const char *dsgd_gpu_errname(dsgd_gpu *g, int r) {
	const char *s = 0;
	if (r >= 3000 && g->missing) return g->missing;
	if (r >= 2000 && r < 3000 && g->dnnErr) return g->dnnErr(r - 2000);
	if (r > 0 && r < 1000 && g->getErrorName && g->getErrorName(r, &s) == 0) return s;
	return "";
}

int dsgd_alloc(dsgd_gpu *g, devptr *p, size_t bytes) { CUR(g); return g->memAlloc(p, bytes); }
int dsgd_free(dsgd_gpu *g, devptr p) { CUR(g); return g->memFree(p); }
int dsgd_htod(dsgd_gpu *g, devptr dst, const void *src, size_t bytes) { CUR(g); return g->htod(dst, src, bytes); }
int dsgd_dtoh(dsgd_gpu *g, void *dst, devptr src, size_t bytes) { CUR(g); return g->dtoh(dst, src, bytes); }
int dsgd_dtod(dsgd_gpu *g, devptr dst, devptr src, size_t bytes) { CUR(g); return g->dtod(dst, src, bytes); }
int dsgd_memset32(dsgd_gpu *g, devptr dst, unsigned v, size_t n) { CUR(g); return g->memsetD32(dst, v, n); }
int dsgd_sync(dsgd_gpu *g) { CUR(g); return g->ctxSynchronize(); }
int dsgd_meminfo(dsgd_gpu *g, size_t *free, size_t *total) { CUR(g); return g->memGetInfo(free, total); }

int dsgd_ensure_ws(dsgd_gpu *g, size_t bytes) {
	if (bytes <= g->ws_size) return 0;
	CUR(g);
	DRV(g->ctxSynchronize());
	if (g->ws) DRV(g->memFree(g->ws));
	g->ws = 0, g->ws_size = 0;
	DRV(g->memAlloc(&g->ws, bytes));
	g->ws_size = bytes;
	return 0;
}

int dsgd_ensure_ones(dsgd_gpu *g, size_t n) {
	if (n <= g->ones_n) return 0;
	CUR(g);
	DRV(g->ctxSynchronize());
	if (g->ones) DRV(g->memFree(g->ones));
	g->ones = 0, g->ones_n = 0;
	DRV(g->memAlloc(&g->ones, 4 * n));
	float one = 1;
	unsigned bits;
	memcpy(&bits, &one, 4);
	DRV(g->memsetD32(g->ones, bits, n));
	g->ones_n = n;
	return 0;
}

int dsgd_launch(dsgd_gpu *g, int k, int n, int channels, void **args) {
	CUR(g);
	unsigned grid, block = 256;
	if (channels > 0) {
		grid = channels;
	} else {
		if (n <= 0) return 0;
		grid = (n + block - 1) / block;
		if (grid > 8192) grid = 8192;
	}
	return g->launch(g->kern[k], grid, 1, 1, block, 1, 1, 0, 0, args, 0);
}

// cuBLAS is column-major: row-major C = op(A)·op(B) is column-major
// Cᵀ = op(B)ᵀ·op(A)ᵀ, the operands swapped and each op kept.
int dsgd_gemm(dsgd_gpu *g, int ta, int tb, int m, int n, int k, float alpha, devptr a, int lda, devptr b, int ldb, float beta, devptr c, int ldc) {
	CUR(g);
	BLAS(g->sgemm(g->blas_h, tb, ta, n, m, k, &alpha, (const float *)b, ldb, (const float *)a, lda, &beta, (float *)c, ldc));
	return 0;
}

// Row-major A (m×n) is column-major Aᵀ (n×m): op flips.
int dsgd_gemv(dsgd_gpu *g, int ta, int m, int n, float alpha, devptr a, devptr x, float beta, devptr y) {
	CUR(g);
	BLAS(g->sgemv(g->blas_h, ta ? 0 : 1, n, m, &alpha, (const float *)a, n, (const float *)x, 1, &beta, (float *)y, 1));
	return 0;
}

int dsgd_axpy(dsgd_gpu *g, int n, float alpha, devptr x, devptr y) {
	CUR(g);
	BLAS(g->saxpy(g->blas_h, n, &alpha, (const float *)x, 1, (float *)y, 1));
	return 0;
}

int dsgd_scal(dsgd_gpu *g, int n, float alpha, devptr x) {
	CUR(g);
	BLAS(g->sscal(g->blas_h, n, &alpha, (float *)x, 1));
	return 0;
}

// cuDNN's algorithm-search results (cudnnConvolution*AlgoPerf_t: the
// three have one layout).
typedef struct {
	int algo, status;
	float time;
	size_t memory;
	int determinism, mathType;
	int reserved[3];
} perf_t;

enum { NCHW = 0, FLOAT = 0, CROSS_CORRELATION = 1, FMA_MATH = 3, DEFAULT_MATH = 0, DETERMINISTIC = 1, NPERF = 16 };

// pick returns the fastest deterministic algorithm that needs at most
// limit bytes of workspace, else the fastest that fits (with fastest,
// the fastest that fits), else -1.
static int pick(perf_t *p, int n, size_t limit, size_t *mem, float *ms, int *math, int fastest) {
	for (int pass = fastest; pass < 2; pass++)
		for (int i = 0; i < n; i++)
			if (p[i].status == 0 && p[i].memory <= limit && (pass || p[i].determinism == DETERMINISTIC)) {
				*mem = p[i].memory, *ms = p[i].time, *math = p[i].mathType;
				return p[i].algo;
			}
	return -1;
}

// geom: n, c, h, w, k (outputs), kh, kw, oh, ow, padh, padw, strideh,
// stridew, dilationh, dilationw, groups, bias.
int dsgd_conv_setup(dsgd_gpu *g, dsgd_conv *c, const int *q, size_t limit) {
	CUR(g);
	memset(c, 0, sizeof *c);
	DNN(g->createTensor(&c->x));
	DNN(g->createTensor(&c->y));
	DNN(g->createFilter(&c->w));
	DNN(g->createConv(&c->conv));
	DNN(g->setTensor4d(c->x, NCHW, FLOAT, q[0], q[1], q[2], q[3]));
	DNN(g->setTensor4d(c->y, NCHW, FLOAT, q[0], q[4], q[7], q[8]));
	DNN(g->setFilter4d(c->w, FLOAT, NCHW, q[4], q[1] / q[15], q[5], q[6]));
	DNN(g->setConv2d(c->conv, q[9], q[10], q[11], q[12], q[13], q[14], CROSS_CORRELATION, FLOAT));
	DNN(g->setConvGroups(c->conv, q[15]));
	DNN(g->setConvMath(c->conv, g->tf32 ? DEFAULT_MATH : FMA_MATH));
	if (q[16]) {
		DNN(g->createTensor(&c->b));
		DNN(g->setTensor4d(c->b, NCHW, FLOAT, 1, q[4], 1, 1));
	}
	perf_t p[NPERF];
	int n = 0;
	DNN(g->findFwd(g->dnn_h, c->x, c->w, c->conv, c->y, NPERF, &n, p));
	if ((c->fwd = pick(p, n, limit, &c->ws_fwd, &c->ms_fwd, &c->math_fwd, g->fastest)) < 0) return 2000 + 9; // CUDNN_STATUS_NOT_SUPPORTED
	DNN(g->findBwdData(g->dnn_h, c->w, c->y, c->conv, c->x, NPERF, &n, p));
	if ((c->bwd_data = pick(p, n, limit, &c->ws_bwd_data, &c->ms_bwd_data, &c->math_bwd_data, g->fastest)) < 0) return 2000 + 9;
	DNN(g->findBwdFilter(g->dnn_h, c->x, c->y, c->conv, c->w, NPERF, &n, p));
	if ((c->bwd_filter = pick(p, n, limit, &c->ws_bwd_filter, &c->ms_bwd_filter, &c->math_bwd_filter, g->fastest)) < 0) return 2000 + 9;
	size_t need = c->ws_fwd;
	if (c->ws_bwd_data > need) need = c->ws_bwd_data;
	if (c->ws_bwd_filter > need) need = c->ws_bwd_filter;
	return dsgd_ensure_ws(g, need);
}

int dsgd_conv_destroy(dsgd_gpu *g, dsgd_conv *c) {
	CUR(g);
	if (c->x) DNN(g->destroyTensor(c->x));
	if (c->y) DNN(g->destroyTensor(c->y));
	if (c->b) DNN(g->destroyTensor(c->b));
	if (c->w) DNN(g->destroyFilter(c->w));
	if (c->conv) DNN(g->destroyConv(c->conv));
	memset(c, 0, sizeof *c);
	return 0;
}

int dsgd_conv_fwd(dsgd_gpu *g, dsgd_conv *c, devptr x, devptr w, devptr b, devptr y) {
	CUR(g);
	float one = 1, zero = 0;
	// With TF32 each algorithm runs in the math type cuDNN measured it
	// in (as PyTorch sets it); in fp32 the descriptor stays FMA-only.
	if (g->tf32) DNN(g->setConvMath(c->conv, c->math_fwd));
	DNN(g->convFwd(g->dnn_h, &one, c->x, x, c->w, w, c->conv, c->fwd, g->ws, g->ws_size, &zero, c->y, y));
	if (b) DNN(g->addTensor(g->dnn_h, &one, c->b, b, &one, c->y, y));
	return 0;
}

// dsgd_conv_bwd adds the filter and bias gradients into dw and db (each
// skipped when 0) and writes the input gradient into dx (skipped when 0).
int dsgd_conv_bwd(dsgd_gpu *g, dsgd_conv *c, devptr x, devptr w, devptr dy, devptr dx, devptr dw, devptr db) {
	CUR(g);
	float one = 1, zero = 0;
	if (db) DNN(g->convBwdBias(g->dnn_h, &one, c->y, dy, &one, c->b, db));
	if (dw && g->tf32) DNN(g->setConvMath(c->conv, c->math_bwd_filter));
	if (dw) DNN(g->convBwdFilter(g->dnn_h, &one, c->x, x, c->y, dy, c->conv, c->bwd_filter, g->ws, g->ws_size, &one, c->w, dw));
	if (dx && g->tf32) DNN(g->setConvMath(c->conv, c->math_bwd_data));
	if (dx) DNN(g->convBwdData(g->dnn_h, &one, c->w, w, c->y, dy, c->conv, c->bwd_data, g->ws, g->ws_size, &zero, c->x, dx));
	return 0;
}

int dsgd_lrn_setup(dsgd_gpu *g, dsgd_lrn *l, int n, int c, int h, int w, int size, double alpha, double beta, double k) {
	CUR(g);
	memset(l, 0, sizeof *l);
	DNN(g->createTensor(&l->x));
	DNN(g->setTensor4d(l->x, NCHW, FLOAT, n, c, h, w));
	DNN(g->createLRN(&l->lrn));
	DNN(g->setLRN(l->lrn, size, alpha, beta, k));
	return 0;
}

int dsgd_lrn_destroy(dsgd_gpu *g, dsgd_lrn *l) {
	CUR(g);
	if (l->x) DNN(g->destroyTensor(l->x));
	if (l->lrn) DNN(g->destroyLRN(l->lrn));
	memset(l, 0, sizeof *l);
	return 0;
}

// CUDNN_LRN_CROSS_CHANNEL_DIM1 is 0.
int dsgd_lrn_fwd(dsgd_gpu *g, dsgd_lrn *l, devptr x, devptr y) {
	CUR(g);
	float one = 1, zero = 0;
	DNN(g->lrnFwd(g->dnn_h, l->lrn, 0, &one, l->x, x, &zero, l->x, y));
	return 0;
}

int dsgd_lrn_bwd(dsgd_gpu *g, dsgd_lrn *l, devptr x, devptr y, devptr dy, devptr dx) {
	CUR(g);
	float one = 1, zero = 0;
	DNN(g->lrnBwd(g->dnn_h, l->lrn, 0, &one, l->x, y, l->x, dy, l->x, x, &zero, l->x, dx));
	return 0;
}

int dsgd_softmax_setup(dsgd_gpu *g, void **desc, int outer, int channels, int inner) {
	CUR(g);
	*desc = 0;
	DNN(g->createTensor(desc));
	DNN(g->setTensor4d(*desc, NCHW, FLOAT, outer, channels, inner, 1));
	return 0;
}

int dsgd_softmax_destroy(dsgd_gpu *g, void *desc) {
	CUR(g);
	if (desc) DNN(g->destroyTensor(desc));
	return 0;
}

// CUDNN_SOFTMAX_ACCURATE is 1 (the maximum subtracted first),
// CUDNN_SOFTMAX_MODE_CHANNEL 1 (over C for each n, h, w).
int dsgd_softmax_fwd(dsgd_gpu *g, void *desc, devptr x, devptr y) {
	CUR(g);
	float one = 1, zero = 0;
	DNN(g->softmaxFwd(g->dnn_h, 1, 1, &one, desc, x, &zero, desc, y));
	return 0;
}
