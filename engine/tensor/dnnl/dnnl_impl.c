//go:build !purego

// dnnl_impl.c: the C half of package dnnl (dnnl_cgo.go is the Go half):
// oneDNN's functions, looked up at run time so that the binary starts
// without the library, and the primitives dsgd builds over them.
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <oneapi/dnnl/dnnl.h>
#include "dnnl_impl.h"

// The header gives the types and prototypes; the functions are looked up
// at run time so that the binary starts without the library.
#define DSGD_FN(f) static __typeof__(f) *p_##f;
DSGD_FN(dnnl_engine_create)
DSGD_FN(dnnl_stream_create)
DSGD_FN(dnnl_stream_destroy)
DSGD_FN(dnnl_memory_desc_init_by_tag)
DSGD_FN(dnnl_memory_desc_equal)
DSGD_FN(dnnl_memory_desc_get_size)
DSGD_FN(dnnl_memory_create)
DSGD_FN(dnnl_memory_set_data_handle)
DSGD_FN(dnnl_memory_destroy)
DSGD_FN(dnnl_primitive_desc_create)
DSGD_FN(dnnl_primitive_desc_destroy)
DSGD_FN(dnnl_primitive_desc_query_md)
DSGD_FN(dnnl_primitive_create)
DSGD_FN(dnnl_primitive_execute)
DSGD_FN(dnnl_primitive_destroy)
DSGD_FN(dnnl_reorder_primitive_desc_create)
DSGD_FN(dnnl_dilated_convolution_forward_desc_init)
DSGD_FN(dnnl_dilated_convolution_backward_data_desc_init)
DSGD_FN(dnnl_dilated_convolution_backward_weights_desc_init)
DSGD_FN(dnnl_primitive_attr_create)
DSGD_FN(dnnl_primitive_attr_destroy)
DSGD_FN(dnnl_primitive_attr_set_scratchpad_mode)
DSGD_FN(dnnl_pooling_forward_desc_init)
DSGD_FN(dnnl_pooling_backward_desc_init)
DSGD_FN(dnnl_lrn_forward_desc_init)
DSGD_FN(dnnl_lrn_backward_desc_init)
DSGD_FN(dnnl_softmax_forward_desc_init)
DSGD_FN(dnnl_softmax_backward_desc_init)
DSGD_FN(dnnl_primitive_desc_query)
DSGD_FN(dnnl_get_effective_cpu_isa)
DSGD_FN(dnnl_version)
static void (*p_omp_set_num_threads)(int);
static dnnl_engine_t eng;

#define DSGD_LOAD(f) p_##f = (__typeof__(p_##f))dlsym(h, #f); if (!p_##f) return "symbol " #f " missing";

// dsgd_dnnl_bind resolves oneDNN's functions in the library h and creates
// the CPU engine. It returns NULL on success, else what is missing.
const char *dsgd_dnnl_bind(void *h) {
	DSGD_LOAD(dnnl_engine_create)
	DSGD_LOAD(dnnl_stream_create)
	DSGD_LOAD(dnnl_stream_destroy)
	DSGD_LOAD(dnnl_memory_desc_init_by_tag)
	DSGD_LOAD(dnnl_memory_desc_equal)
	DSGD_LOAD(dnnl_memory_desc_get_size)
	DSGD_LOAD(dnnl_memory_create)
	DSGD_LOAD(dnnl_memory_set_data_handle)
	DSGD_LOAD(dnnl_memory_destroy)
	DSGD_LOAD(dnnl_primitive_desc_create)
	DSGD_LOAD(dnnl_primitive_desc_destroy)
	DSGD_LOAD(dnnl_primitive_desc_query_md)
	DSGD_LOAD(dnnl_primitive_create)
	DSGD_LOAD(dnnl_primitive_execute)
	DSGD_LOAD(dnnl_primitive_destroy)
	DSGD_LOAD(dnnl_reorder_primitive_desc_create)
	DSGD_LOAD(dnnl_dilated_convolution_forward_desc_init)
	DSGD_LOAD(dnnl_dilated_convolution_backward_data_desc_init)
	DSGD_LOAD(dnnl_dilated_convolution_backward_weights_desc_init)
	DSGD_LOAD(dnnl_primitive_attr_create)
	DSGD_LOAD(dnnl_primitive_attr_destroy)
	DSGD_LOAD(dnnl_primitive_attr_set_scratchpad_mode)
	DSGD_LOAD(dnnl_pooling_forward_desc_init)
	DSGD_LOAD(dnnl_pooling_backward_desc_init)
	DSGD_LOAD(dnnl_lrn_forward_desc_init)
	DSGD_LOAD(dnnl_lrn_backward_desc_init)
	DSGD_LOAD(dnnl_softmax_forward_desc_init)
	DSGD_LOAD(dnnl_softmax_backward_desc_init)
	DSGD_LOAD(dnnl_primitive_desc_query)
	DSGD_LOAD(dnnl_get_effective_cpu_isa)
	DSGD_LOAD(dnnl_version)
	// oneDNN's OpenMP runtime came with it; dsgd holds it to one thread.
	void *g = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (g) p_omp_set_num_threads = (void (*)(int))dlsym(g, "omp_set_num_threads");
	if (p_omp_set_num_threads) p_omp_set_num_threads(1);
	if (p_dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) return "dnnl_engine_create failed";
	return NULL;
}

// one_thread holds oneDNN's OpenMP runtime to the calling thread. OpenMP's
// thread count is per OS thread and a goroutine moves between OS threads,
// so every call that creates or runs a primitive sets it first: a
// primitive plans its work for the thread count it was created under.
static void one_thread(void) {
	if (p_omp_set_num_threads) p_omp_set_num_threads(1);
}

int dsgd_dnnl_isa(void) { return (int)p_dnnl_get_effective_cpu_isa(); }
void dsgd_dnnl_version(int *v) {
	const dnnl_version_t *ver = p_dnnl_version();
	v[0] = ver->major; v[1] = ver->minor; v[2] = ver->patch;
}

// A port connects a tensor in the caller's layout to the layout a
// primitive wants: a user memory whose handle is set per call and, when
// the layouts differ, an inner memory and a reorder between them.

static dnnl_status_t port_init(port_t *p, const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *want, int out) {
	dnnl_status_t st = p_dnnl_memory_create(&p->user, user_md, eng, DNNL_MEMORY_NONE);
	if (st != dnnl_success) return st;
	if (p_dnnl_memory_desc_equal(user_md, want)) return dnnl_success;
	st = p_dnnl_memory_create(&p->inner, want, eng, DNNL_MEMORY_ALLOCATE);
	if (st != dnnl_success) return st;
	dnnl_primitive_desc_t rpd;
	st = out ? p_dnnl_reorder_primitive_desc_create(&rpd, want, eng, user_md, eng, NULL)
	         : p_dnnl_reorder_primitive_desc_create(&rpd, user_md, eng, want, eng, NULL);
	if (st != dnnl_success) return st;
	st = p_dnnl_primitive_create(&p->reorder, rpd);
	p_dnnl_primitive_desc_destroy(rpd);
	return st;
}

static void port_free(port_t *p) {
	if (p->reorder) p_dnnl_primitive_destroy(p->reorder);
	if (p->inner) p_dnnl_memory_destroy(p->inner);
	if (p->user) p_dnnl_memory_destroy(p->user);
}

static dnnl_memory_t port_mem(port_t *p) { return p->inner ? p->inner : p->user; }

// reorder_ns[0] is the time every thread has spent reordering
// activations and their gradients, summed: what keeping them in oneDNN's
// layouts between layers would save; reorder_ns[1] the same for weights.
static int64_t reorder_ns[2];

int64_t dsgd_reorder_ns(int wei) { return __atomic_load_n(&reorder_ns[wei], __ATOMIC_RELAXED); }

static void port_run(port_t *p, dnnl_stream_t s, int out) {
	if (!p->inner) return;
	dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, out ? p->inner : p->user}, {DNNL_ARG_TO, out ? p->user : p->inner}};
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p_dnnl_primitive_execute(p->reorder, s, 2, a);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	__atomic_add_fetch(&reorder_ns[p->wei], (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec), __ATOMIC_RELAXED);
}

// port_in sets the caller's buffer and brings it into the primitive's layout.
static void port_in(port_t *p, dnnl_stream_t s, void *ptr) {
	p_dnnl_memory_set_data_handle(p->user, ptr);
	port_run(p, s, 0);
}

// Convolution scratchpads come from one process-wide pool, not one buffer
// per primitive: Winograd's hold the transformed tensors (tens of MB a
// layer at batch 16), and only the primitives running at one moment (one
// a worker) need theirs. scratch_get takes a free buffer of at least n
// bytes (growing the largest free one when none is big enough), or a new
// one; scratch_put hands it back. Buffers only grow, so after a net's first
// iteration the pool holds one buffer of the largest size per concurrent
// worker.
#define SCRATCH_MAX 64
static pthread_mutex_t scratch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { void *p; size_t cap; } scratch_free[SCRATCH_MAX];
static int scratch_n;

static void *scratch_get(size_t n, size_t *cap) {
	*cap = 0;
	if (n == 0) return NULL;
	pthread_mutex_lock(&scratch_mu);
	int best = -1;
	for (int i = 0; i < scratch_n; i++) {
		if (scratch_free[i].cap >= n && (best < 0 || scratch_free[i].cap < scratch_free[best].cap)) best = i;
	}
	if (best < 0) { // none big enough: replace the largest free one
		for (int i = 0; i < scratch_n; i++) {
			if (best < 0 || scratch_free[i].cap > scratch_free[best].cap) best = i;
		}
	}
	void *p = NULL;
	if (best >= 0) {
		p = scratch_free[best].p;
		*cap = scratch_free[best].cap;
		scratch_free[best] = scratch_free[--scratch_n];
	}
	pthread_mutex_unlock(&scratch_mu);
	if (*cap >= n) return p;
	free(p);
	*cap = (n + 4095) & ~(size_t)4095;
	p = aligned_alloc(4096, *cap);
	if (!p) abort();
	return p;
}

static void scratch_put(void *p, size_t cap) {
	if (!p) return;
	pthread_mutex_lock(&scratch_mu);
	if (scratch_n < SCRATCH_MAX) {
		scratch_free[scratch_n].p = p;
		scratch_free[scratch_n].cap = cap;
		scratch_n++;
		p = NULL;
	}
	pthread_mutex_unlock(&scratch_mu);
	free(p);
}

// exec_scratch runs primitive pr with args a, its scratchpad memory pad
// (of size n bytes) lent a pool buffer for the call.
static void exec_scratch(dnnl_primitive_t pr, dnnl_stream_t s, int na, dnnl_exec_arg_t *a, dnnl_memory_t pad, size_t n) {
	size_t cap;
	void *buf = scratch_get(n, &cap);
	p_dnnl_memory_set_data_handle(pad, buf);
	p_dnnl_primitive_execute(pr, s, na, a);
	p_dnnl_memory_set_data_handle(pad, NULL);
	scratch_put(buf, cap);
}

// impl_copy stores the implementation name of pd (oneDNN's impl_info_str,
// "jit:avx2", "simple_nchw:any", "lrn_ref:any", ...) in dst.
static void impl_copy(char *dst, size_t n, dnnl_primitive_desc_t pd) {
	const char *s = NULL;
	dst[0] = 0;
	if (p_dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) == dnnl_success && s) {
		strncpy(dst, s, n - 1);
		dst[n - 1] = 0;
	}
}

// layout_tag is the 4-D tag of a layout code: 0 plain NCHW, 8 or 16
// channels blocked by that many (oneDNN's nChw8c, nChw16c).
static dnnl_format_tag_t layout_tag(int blk) {
	return blk == 16 ? dnnl_aBcd16b : blk == 8 ? dnnl_aBcd8b : dnnl_nchw;
}


static const dnnl_memory_desc_t *qmd(dnnl_primitive_desc_t pd, dnnl_query_t q) {
	return p_dnnl_primitive_desc_query_md(pd, q, 0);
}

// conv_create builds the three primitives of one convolution on algorithm
// alg. g is 0 for an ungrouped convolution. On failure it sets *why and
// returns what it built, for dsgd_conv_free.
static conv_t *conv_create(const int64_t *v, int g, int bias, dnnl_alg_kind_t alg, int plain, const char **why) {
	// v: N C H W OC OH OW KH KW SH SW PT PL PB PR DH DW
	int64_t N = v[0], C = v[1], H = v[2], W = v[3], OC = v[4], OH = v[5], OW = v[6];
	dnnl_dims_t src_d = {N, C, H, W}, dst_d = {N, OC, OH, OW}, bia_d = {OC};
	dnnl_dims_t strides = {v[9], v[10]}, dil = {v[15] - 1, v[16] - 1}, pl = {v[11], v[12]}, pr = {v[13], v[14]};
	dnnl_memory_desc_t u_src, u_dst, u_wei, u_bia, a_src, a_dst, a_wei;
	if (g > 1) {
		dnnl_dims_t wd = {g, OC / g, C / g, v[7], v[8]};
		p_dnnl_memory_desc_init_by_tag(&u_wei, 5, wd, dnnl_f32, dnnl_goihw);
		p_dnnl_memory_desc_init_by_tag(&a_wei, 5, wd, dnnl_f32, dnnl_format_tag_any);
	} else {
		dnnl_dims_t wd = {OC, C, v[7], v[8]};
		p_dnnl_memory_desc_init_by_tag(&u_wei, 4, wd, dnnl_f32, dnnl_oihw);
		p_dnnl_memory_desc_init_by_tag(&a_wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
	}
	p_dnnl_memory_desc_init_by_tag(&u_src, 4, src_d, dnnl_f32, dnnl_nchw);
	p_dnnl_memory_desc_init_by_tag(&a_src, 4, src_d, dnnl_f32, plain ? dnnl_nchw : dnnl_format_tag_any);
	p_dnnl_memory_desc_init_by_tag(&u_dst, 4, dst_d, dnnl_f32, dnnl_nchw);
	p_dnnl_memory_desc_init_by_tag(&a_dst, 4, dst_d, dnnl_f32, plain ? dnnl_nchw : dnnl_format_tag_any);
	p_dnnl_memory_desc_init_by_tag(&u_bia, 1, bia_d, dnnl_f32, dnnl_x);

	one_thread();
	conv_t *c = calloc(1, sizeof(conv_t));
	// Scratchpads owned by the Conv (not oneDNN's per-thread ones): a
	// goroutine's calls land on whichever OS thread runs it.
	dnnl_primitive_attr_t attr = NULL;
	if (p_dnnl_primitive_attr_create(&attr) != dnnl_success ||
	    p_dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) {
		*why = "attributes";
		return c;
	}
	c->bias = bias;
	dnnl_convolution_desc_t fd, dd, wd;
	dnnl_primitive_desc_t fpd = NULL, dpd = NULL, wpd = NULL;
	*why = "stream";
	if (p_dnnl_stream_create(&c->s, eng, dnnl_stream_default_flags) != dnnl_success) goto fail;
	*why = "forward descriptor";
	if (p_dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, alg,
	        &a_src, &a_wei, bias ? &u_bia : NULL, &a_dst, strides, dil, pl, pr) != dnnl_success) goto fail;
	if (p_dnnl_primitive_desc_create(&fpd, &fd, attr, eng, NULL) != dnnl_success) goto fail;
	*why = "backward-data descriptor";
	if (p_dnnl_dilated_convolution_backward_data_desc_init(&dd, alg,
	        &a_src, &a_wei, &a_dst, strides, dil, pl, pr) != dnnl_success) goto fail;
	if (p_dnnl_primitive_desc_create(&dpd, &dd, attr, eng, fpd) != dnnl_success) goto fail;
	*why = "backward-weights descriptor";
	// A first layer (up to 4 input channels, which the forward pass reads
	// plain): the weights pass on the plain src where oneDNN has a JIT or
	// JIT-GEMM kernel for it. With src "any" it may pick the
	// channel-blocked layout, padding the channels to the block: LeNet's
	// conv1 (1 channel) did 8x the work under AVX2 (jit:avx2 on aBcd8b,
	// 7.0-8.8 ms against 2.6-4.1 on x64:gemm:jit; docs/benchmarks.md).
	// Where oneDNN picks the same kernel either way (CaffeNet's, GoogLeNet's
	// and cifar10_quick's conv1) nothing changes but a reorder saved.
	if (C <= 4) {
		const char *impl = NULL;
		if (p_dnnl_dilated_convolution_backward_weights_desc_init(&wd, alg,
		        &u_src, &a_wei, bias ? &u_bia : NULL, &a_dst, strides, dil, pl, pr) == dnnl_success &&
		    p_dnnl_primitive_desc_create(&wpd, &wd, attr, eng, fpd) == dnnl_success &&
		    p_dnnl_primitive_desc_query(wpd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
		    strstr(impl, "jit") != NULL && strstr(impl, "ref") == NULL) {
			// kept
		} else if (wpd) {
			p_dnnl_primitive_desc_destroy(wpd);
			wpd = NULL;
		}
	}
	if (wpd == NULL) {
		if (p_dnnl_dilated_convolution_backward_weights_desc_init(&wd, alg,
		        &a_src, &a_wei, bias ? &u_bia : NULL, &a_dst, strides, dil, pl, pr) != dnnl_success) goto fail;
		if (p_dnnl_primitive_desc_create(&wpd, &wd, attr, eng, fpd) != dnnl_success) goto fail;
	}
	impl_copy(c->impl_f, sizeof c->impl_f, fpd);
	impl_copy(c->impl_d, sizeof c->impl_d, dpd);
	impl_copy(c->impl_w, sizeof c->impl_w, wpd);
	*why = "primitives";
	if (p_dnnl_primitive_create(&c->fwd, fpd) != dnnl_success) goto fail;
	if (p_dnnl_primitive_create(&c->bwd_d, dpd) != dnnl_success) goto fail;
	if (p_dnnl_primitive_create(&c->bwd_w, wpd) != dnnl_success) goto fail;
	*why = "scratchpads";
	if (p_dnnl_memory_create(&c->pad_f, qmd(fpd, dnnl_query_scratchpad_md), eng, DNNL_MEMORY_NONE)) goto fail;
	if (p_dnnl_memory_create(&c->pad_d, qmd(dpd, dnnl_query_scratchpad_md), eng, DNNL_MEMORY_NONE)) goto fail;
	if (p_dnnl_memory_create(&c->pad_w, qmd(wpd, dnnl_query_scratchpad_md), eng, DNNL_MEMORY_NONE)) goto fail;
	c->pad_n[0] = p_dnnl_memory_desc_get_size(qmd(fpd, dnnl_query_scratchpad_md));
	c->pad_n[1] = p_dnnl_memory_desc_get_size(qmd(dpd, dnnl_query_scratchpad_md));
	c->pad_n[2] = p_dnnl_memory_desc_get_size(qmd(wpd, dnnl_query_scratchpad_md));
	*why = "reorders";
	if (port_init(&c->f_src, &u_src, qmd(fpd, dnnl_query_src_md), 0)) goto fail;
	if (port_init(&c->f_wei, &u_wei, qmd(fpd, dnnl_query_weights_md), 0)) goto fail;
	if (port_init(&c->f_dst, &u_dst, qmd(fpd, dnnl_query_dst_md), 1)) goto fail;
	if (bias && port_init(&c->f_bia, &u_bia, &u_bia, 0)) goto fail;
	if (port_init(&c->d_ddst, &u_dst, qmd(dpd, dnnl_query_diff_dst_md), 0)) goto fail;
	if (port_init(&c->d_wei, &u_wei, qmd(dpd, dnnl_query_weights_md), 0)) goto fail;
	if (port_init(&c->d_dsrc, &u_src, qmd(dpd, dnnl_query_diff_src_md), 1)) goto fail;
	// The weights pass shares the forward pass's src buffer and the data
	// pass's diff_dst buffer when the layouts agree (they do on the JIT
	// kernels): one copy of each, not two.
	c->w_src_from_fwd = p_dnnl_memory_desc_equal(qmd(wpd, dnnl_query_src_md), qmd(fpd, dnnl_query_src_md));
	c->w_ddst_from_data = p_dnnl_memory_desc_equal(qmd(wpd, dnnl_query_diff_dst_md), qmd(dpd, dnnl_query_diff_dst_md));
	if (!c->w_src_from_fwd && port_init(&c->w_src, &u_src, qmd(wpd, dnnl_query_src_md), 0)) goto fail;
	if (!c->w_ddst_from_data && port_init(&c->w_ddst, &u_dst, qmd(wpd, dnnl_query_diff_dst_md), 0)) goto fail;
	if (port_init(&c->w_dwei, &u_wei, qmd(wpd, dnnl_query_diff_weights_md), 1)) goto fail;
	c->f_wei.wei = c->d_wei.wei = c->w_dwei.wei = 1;
	if (bias && port_init(&c->w_dbia, &u_bia, &u_bia, 1)) goto fail;
	p_dnnl_primitive_desc_destroy(fpd);
	p_dnnl_primitive_desc_destroy(dpd);
	p_dnnl_primitive_desc_destroy(wpd);
	p_dnnl_primitive_attr_destroy(attr);
	*why = NULL;
	return c;
fail:
	p_dnnl_primitive_attr_destroy(attr);
	if (fpd) p_dnnl_primitive_desc_destroy(fpd);
	if (dpd) p_dnnl_primitive_desc_destroy(dpd);
	if (wpd) p_dnnl_primitive_desc_destroy(wpd);
	return c; // caller frees with dsgd_conv_free
}

// dsgd_conv_create: with bit 0 of flags set, oneDNN's Winograd kernels
// first (it has them for 3x3 stride-1 convolutions from AVX-512 up, for
// all three passes), the direct ones where any of the three is missing.
// Bit 1 keeps the activations in plain NCHW (no reorders; oneDNN picks its
// kernels for that layout).
conv_t *dsgd_conv_create(const int64_t *v, int g, int bias, int flags, const char **why) {
	int plain = (flags & 2) != 0;
	if (flags & 1) {
		conv_t *c = conv_create(v, g, bias, dnnl_convolution_winograd, plain, why);
		if (!*why) return c;
		dsgd_conv_free(c);
	}
	return conv_create(v, g, bias, dnnl_convolution_direct, plain, why);
}

void dsgd_conv_free(conv_t *c) {
	if (!c) return;
	port_t *ports[] = {&c->f_src, &c->f_wei, &c->f_bia, &c->f_dst, &c->d_ddst, &c->d_wei, &c->d_dsrc,
	                   &c->w_src, &c->w_ddst, &c->w_dwei, &c->w_dbia};
	for (int i = 0; i < 11; i++) port_free(ports[i]);
	if (c->fwd) p_dnnl_primitive_destroy(c->fwd);
	if (c->bwd_d) p_dnnl_primitive_destroy(c->bwd_d);
	if (c->bwd_w) p_dnnl_primitive_destroy(c->bwd_w);
	if (c->pad_f) p_dnnl_memory_destroy(c->pad_f);
	if (c->pad_d) p_dnnl_memory_destroy(c->pad_d);
	if (c->pad_w) p_dnnl_memory_destroy(c->pad_w);
	if (c->s) p_dnnl_stream_destroy(c->s);
	free(c);
}

void dsgd_conv_forward(conv_t *c, float *src, float *wei, float *bia, float *dst) {
	one_thread();
	port_in(&c->f_src, c->s, src);
	port_in(&c->f_wei, c->s, wei);
	p_dnnl_memory_set_data_handle(c->f_dst.user, dst);
	dnnl_exec_arg_t a[5] = {{DNNL_ARG_SRC, port_mem(&c->f_src)}, {DNNL_ARG_WEIGHTS, port_mem(&c->f_wei)},
	                        {DNNL_ARG_DST, port_mem(&c->f_dst)}, {DNNL_ARG_SCRATCHPAD, c->pad_f}, {DNNL_ARG_BIAS, NULL}};
	int n = 4;
	if (c->bias) {
		p_dnnl_memory_set_data_handle(c->f_bia.user, bia);
		a[4].memory = port_mem(&c->f_bia);
		n = 5;
	}
	exec_scratch(c->fwd, c->s, n, a, c->pad_f, c->pad_n[0]);
	port_run(&c->f_dst, c->s, 1);
}

// dsgd_conv_backward computes the weight (and bias) gradients of this
// batch into dwei/dbia, overwriting them, and, when dsrc is not NULL, the
// input gradient. fresh says src is what the last forward call read,
// unchanged, so its reordered copy can be reused.
void dsgd_conv_backward(conv_t *c, float *src, float *ddst, float *wei, float *dsrc, float *dwei, float *dbia, int fresh) {
	one_thread();
	dnnl_memory_t ddst_d = NULL;
	if (dsrc) {
		port_in(&c->d_ddst, c->s, ddst);
		port_in(&c->d_wei, c->s, wei);
		p_dnnl_memory_set_data_handle(c->d_dsrc.user, dsrc);
		ddst_d = port_mem(&c->d_ddst);
		dnnl_exec_arg_t a[4] = {{DNNL_ARG_DIFF_DST, ddst_d}, {DNNL_ARG_WEIGHTS, port_mem(&c->d_wei)},
		                        {DNNL_ARG_DIFF_SRC, port_mem(&c->d_dsrc)}, {DNNL_ARG_SCRATCHPAD, c->pad_d}};
		exec_scratch(c->bwd_d, c->s, 4, a, c->pad_d, c->pad_n[1]);
		port_run(&c->d_dsrc, c->s, 1);
	}
	if (!dwei) return; // no weight gradient wanted
	dnnl_memory_t srcm, ddstm;
	if (c->w_src_from_fwd) {
		if (!(fresh && c->f_src.inner)) port_in(&c->f_src, c->s, src);
		srcm = port_mem(&c->f_src);
	} else {
		port_in(&c->w_src, c->s, src);
		srcm = port_mem(&c->w_src);
	}
	if (c->w_ddst_from_data) {
		if (!ddst_d) {
			port_in(&c->d_ddst, c->s, ddst);
			ddst_d = port_mem(&c->d_ddst);
		}
		ddstm = ddst_d;
	} else {
		port_in(&c->w_ddst, c->s, ddst);
		ddstm = port_mem(&c->w_ddst);
	}
	p_dnnl_memory_set_data_handle(c->w_dwei.user, dwei);
	dnnl_exec_arg_t a[5] = {{DNNL_ARG_SRC, srcm}, {DNNL_ARG_DIFF_DST, ddstm},
	                        {DNNL_ARG_DIFF_WEIGHTS, port_mem(&c->w_dwei)}, {DNNL_ARG_SCRATCHPAD, c->pad_w}, {DNNL_ARG_DIFF_BIAS, NULL}};
	int n = 4;
	if (c->bias) {
		p_dnnl_memory_set_data_handle(c->w_dbia.user, dbia);
		a[4].memory = port_mem(&c->w_dbia);
		n = 5;
	}
	exec_scratch(c->bwd_w, c->s, n, a, c->pad_w, c->pad_n[2]);
	port_run(&c->w_dwei, c->s, 1);
}



void dsgd_pool_free(pool_t *p) {
	if (!p) return;
	port_free(&p->src); port_free(&p->dst); port_free(&p->ddst); port_free(&p->dsrc);
	if (p->ws) p_dnnl_memory_destroy(p->ws);
	if (p->pad_f) p_dnnl_memory_destroy(p->pad_f);
	if (p->pad_b) p_dnnl_memory_destroy(p->pad_b);
	if (p->fwd) p_dnnl_primitive_destroy(p->fwd);
	if (p->bwd) p_dnnl_primitive_destroy(p->bwd);
	if (p->s) p_dnnl_stream_destroy(p->s);
	free(p);
}

// op_finish completes a pool_t (pooling or LRN: one input, one output, a
// workspace) from its forward and backward descriptors.
static pool_t *op_finish(pool_t *p, const_dnnl_op_desc_t fd, const_dnnl_op_desc_t bd,
                         const dnnl_memory_desc_t *u_src, const dnnl_memory_desc_t *u_dst, const char **why) {
	dnnl_primitive_attr_t attr = NULL;
	dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
	const dnnl_memory_desc_t *ws;
	*why = "attributes";
	if (p_dnnl_primitive_attr_create(&attr) != dnnl_success ||
	    p_dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) goto fail;
	*why = "stream";
	if (p_dnnl_stream_create(&p->s, eng, dnnl_stream_default_flags) != dnnl_success) goto fail;
	*why = "forward descriptor";
	if (p_dnnl_primitive_desc_create(&fpd, fd, attr, eng, NULL) != dnnl_success) goto fail;
	*why = "backward descriptor";
	if (p_dnnl_primitive_desc_create(&bpd, bd, attr, eng, fpd) != dnnl_success) goto fail;
	impl_copy(p->impl_f, sizeof p->impl_f, fpd);
	impl_copy(p->impl_b, sizeof p->impl_b, bpd);
	*why = "primitives";
	if (p_dnnl_primitive_create(&p->fwd, fpd) != dnnl_success) goto fail;
	if (p_dnnl_primitive_create(&p->bwd, bpd) != dnnl_success) goto fail;
	*why = "memories";
	if (p_dnnl_memory_create(&p->pad_f, qmd(fpd, dnnl_query_scratchpad_md), eng, DNNL_MEMORY_ALLOCATE)) goto fail;
	if (p_dnnl_memory_create(&p->pad_b, qmd(bpd, dnnl_query_scratchpad_md), eng, DNNL_MEMORY_ALLOCATE)) goto fail;
	ws = qmd(fpd, dnnl_query_workspace_md);
	if (ws && ws->ndims > 0 && p_dnnl_memory_create(&p->ws, ws, eng, DNNL_MEMORY_ALLOCATE)) goto fail;
	if (port_init(&p->src, u_src, qmd(fpd, dnnl_query_src_md), 0)) goto fail;
	if (port_init(&p->dst, u_dst, qmd(fpd, dnnl_query_dst_md), 1)) goto fail;
	if (port_init(&p->ddst, u_dst, qmd(bpd, dnnl_query_diff_dst_md), 0)) goto fail;
	if (port_init(&p->dsrc, u_src, qmd(bpd, dnnl_query_diff_src_md), 1)) goto fail;
	*why = NULL;
fail:
	if (fpd) p_dnnl_primitive_desc_destroy(fpd);
	if (bpd) p_dnnl_primitive_desc_destroy(bpd);
	if (attr) p_dnnl_primitive_attr_destroy(attr);
	return p;
}

// dsgd_pool_create builds forward and backward pooling; v: N C H W OH OW
// KH KW SH SW PT PL PB PR; max 1 for MAX, 0 for the average over the
// window's part inside the image; blk the layout the primitives run on
// (layout_tag), reordered from and to the caller's NCHW.
pool_t *dsgd_pool_create(const int64_t *v, int max, int blk, const char **why) {
	dnnl_dims_t src_d = {v[0], v[1], v[2], v[3]}, dst_d = {v[0], v[1], v[4], v[5]};
	dnnl_dims_t k = {v[6], v[7]}, st = {v[8], v[9]}, pl = {v[10], v[11]}, pr = {v[12], v[13]};
	dnnl_memory_desc_t u_src, u_dst, b_src, b_dst;
	p_dnnl_memory_desc_init_by_tag(&u_src, 4, src_d, dnnl_f32, dnnl_nchw);
	p_dnnl_memory_desc_init_by_tag(&u_dst, 4, dst_d, dnnl_f32, dnnl_nchw);
	p_dnnl_memory_desc_init_by_tag(&b_src, 4, src_d, dnnl_f32, layout_tag(blk));
	p_dnnl_memory_desc_init_by_tag(&b_dst, 4, dst_d, dnnl_f32, layout_tag(blk));
	dnnl_alg_kind_t alg = max ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
	one_thread();
	pool_t *p = calloc(1, sizeof(pool_t));
	dnnl_pooling_desc_t fd, bd;
	*why = "pooling descriptors";
	if (p_dnnl_pooling_forward_desc_init(&fd, dnnl_forward_training, alg, &b_src, &b_dst, st, k, pl, pr) != dnnl_success) return p;
	if (p_dnnl_pooling_backward_desc_init(&bd, alg, &b_src, &b_dst, st, k, pl, pr) != dnnl_success) return p;
	return op_finish(p, &fd, &bd, &u_src, &u_dst, why);
}

// dsgd_lrn_create builds LRN across channels over N C H W (v) in Caffe's
// formula: x·(k + alpha/size·Σx²)^-beta over size channels centred on each,
// on the layout blk (layout_tag), reordered from and to the caller's NCHW.
pool_t *dsgd_lrn_create(const int64_t *v, int size, float alpha, float beta, float k, int blk, const char **why) {
	dnnl_dims_t d = {v[0], v[1], v[2], v[3]};
	dnnl_memory_desc_t u, b;
	p_dnnl_memory_desc_init_by_tag(&u, 4, d, dnnl_f32, dnnl_nchw);
	p_dnnl_memory_desc_init_by_tag(&b, 4, d, dnnl_f32, layout_tag(blk));
	one_thread();
	pool_t *p = calloc(1, sizeof(pool_t));
	p->lrn = 1;
	dnnl_lrn_desc_t fd, bd;
	*why = "LRN descriptors";
	if (p_dnnl_lrn_forward_desc_init(&fd, dnnl_forward_training, dnnl_lrn_across_channels, &b, size, alpha, beta, k) != dnnl_success) return p;
	if (p_dnnl_lrn_backward_desc_init(&bd, dnnl_lrn_across_channels, &b, &b, size, alpha, beta, k) != dnnl_success) return p;
	return op_finish(p, &fd, &bd, &u, &u, why);
}

void dsgd_pool_forward(pool_t *p, float *src, float *dst) {
	one_thread();
	port_in(&p->src, p->s, src);
	p_dnnl_memory_set_data_handle(p->dst.user, dst);
	dnnl_exec_arg_t a[4] = {{DNNL_ARG_SRC, port_mem(&p->src)}, {DNNL_ARG_DST, port_mem(&p->dst)},
	                        {DNNL_ARG_SCRATCHPAD, p->pad_f}, {DNNL_ARG_WORKSPACE, p->ws}};
	p_dnnl_primitive_execute(p->fwd, p->s, p->ws ? 4 : 3, a);
	port_run(&p->dst, p->s, 1);
}

void dsgd_pool_backward(pool_t *p, float *src, float *ddst, float *dsrc) {
	one_thread();
	port_in(&p->ddst, p->s, ddst);
	p_dnnl_memory_set_data_handle(p->dsrc.user, dsrc);
	dnnl_exec_arg_t a[5] = {{DNNL_ARG_DIFF_DST, port_mem(&p->ddst)}, {DNNL_ARG_DIFF_SRC, port_mem(&p->dsrc)},
	                        {DNNL_ARG_SCRATCHPAD, p->pad_b}, {DNNL_ARG_WORKSPACE, p->ws}, {DNNL_ARG_SRC, NULL}};
	int n = 3;
	if (p->ws) n = 4;
	if (p->lrn) {
		port_in(&p->src, p->s, src);
		a[n].arg = DNNL_ARG_SRC;
		a[n].memory = port_mem(&p->src);
		n++;
	}
	p_dnnl_primitive_execute(p->bwd, p->s, n, a);
	port_run(&p->dsrc, p->s, 1);
}

// softmax_t is a softmax along axis 1 of an outer x channels x inner
// tensor (plain layout), forward and backward; the caller's buffers are
// used directly (no reorders).

void dsgd_softmax_free(softmax_t *p) {
	if (!p) return;
	dnnl_memory_t m[] = {p->src, p->dst, p->ddst, p->dsrc, p->pad_f, p->pad_b};
	for (int i = 0; i < 6; i++) if (m[i]) p_dnnl_memory_destroy(m[i]);
	if (p->fwd) p_dnnl_primitive_destroy(p->fwd);
	if (p->bwd) p_dnnl_primitive_destroy(p->bwd);
	if (p->s) p_dnnl_stream_destroy(p->s);
	free(p);
}

// dsgd_softmax_create builds the softmax; *impl names oneDNN's
// implementation (the caller refuses its reference code).
softmax_t *dsgd_softmax_create(int64_t outer, int64_t c, int64_t inner, const char **why, const char **impl) {
	dnnl_dims_t d = {outer, c, inner};
	dnnl_memory_desc_t md;
	int nd = inner == 1 ? 2 : 3;
	p_dnnl_memory_desc_init_by_tag(&md, nd, d, dnnl_f32, nd == 2 ? dnnl_ab : dnnl_abc);
	one_thread();
	softmax_t *p = calloc(1, sizeof(softmax_t));
	dnnl_primitive_attr_t attr = NULL;
	dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
	dnnl_softmax_desc_t fd, bd;
	*why = "attributes";
	if (p_dnnl_primitive_attr_create(&attr) != dnnl_success ||
	    p_dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) != dnnl_success) goto fail;
	*why = "stream";
	if (p_dnnl_stream_create(&p->s, eng, dnnl_stream_default_flags) != dnnl_success) goto fail;
	*why = "softmax descriptors";
	if (p_dnnl_softmax_forward_desc_init(&fd, dnnl_forward_training, &md, 1) != dnnl_success) goto fail;
	if (p_dnnl_softmax_backward_desc_init(&bd, &md, &md, 1) != dnnl_success) goto fail;
	if (p_dnnl_primitive_desc_create(&fpd, &fd, attr, eng, NULL) != dnnl_success) goto fail;
	if (p_dnnl_primitive_desc_create(&bpd, &bd, attr, eng, fpd) != dnnl_success) goto fail;
	*impl = "";
	p_dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, impl);
	*why = "primitives";
	if (p_dnnl_primitive_create(&p->fwd, fpd) != dnnl_success) goto fail;
	if (p_dnnl_primitive_create(&p->bwd, bpd) != dnnl_success) goto fail;
	*why = "memories";
	if (p_dnnl_memory_create(&p->pad_f, qmd(fpd, dnnl_query_scratchpad_md), eng, DNNL_MEMORY_ALLOCATE)) goto fail;
	if (p_dnnl_memory_create(&p->pad_b, qmd(bpd, dnnl_query_scratchpad_md), eng, DNNL_MEMORY_ALLOCATE)) goto fail;
	if (p_dnnl_memory_create(&p->src, &md, eng, DNNL_MEMORY_NONE)) goto fail;
	if (p_dnnl_memory_create(&p->dst, &md, eng, DNNL_MEMORY_NONE)) goto fail;
	if (p_dnnl_memory_create(&p->ddst, &md, eng, DNNL_MEMORY_NONE)) goto fail;
	if (p_dnnl_memory_create(&p->dsrc, &md, eng, DNNL_MEMORY_NONE)) goto fail;
	*why = NULL;
fail:
	if (fpd) p_dnnl_primitive_desc_destroy(fpd);
	if (bpd) p_dnnl_primitive_desc_destroy(bpd);
	if (attr) p_dnnl_primitive_attr_destroy(attr);
	return p;
}

void dsgd_softmax_forward(softmax_t *p, float *src, float *dst) {
	one_thread();
	p_dnnl_memory_set_data_handle(p->src, src);
	p_dnnl_memory_set_data_handle(p->dst, dst);
	dnnl_exec_arg_t a[3] = {{DNNL_ARG_SRC, p->src}, {DNNL_ARG_DST, p->dst}, {DNNL_ARG_SCRATCHPAD, p->pad_f}};
	p_dnnl_primitive_execute(p->fwd, p->s, 3, a);
}

void dsgd_softmax_backward(softmax_t *p, float *dst, float *ddst, float *dsrc) {
	one_thread();
	p_dnnl_memory_set_data_handle(p->dst, dst);
	p_dnnl_memory_set_data_handle(p->ddst, ddst);
	p_dnnl_memory_set_data_handle(p->dsrc, dsrc);
	dnnl_exec_arg_t a[4] = {{DNNL_ARG_DST, p->dst}, {DNNL_ARG_DIFF_DST, p->ddst}, {DNNL_ARG_DIFF_SRC, p->dsrc},
	                        {DNNL_ARG_SCRATCHPAD, p->pad_b}};
	p_dnnl_primitive_execute(p->bwd, p->s, 4, a);
}
