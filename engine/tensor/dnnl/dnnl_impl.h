// dnnl_impl.h: what dnnl_cgo.go calls in dnnl_impl.c, the C half of the
// package: oneDNN's functions looked up at run time (dlopen) and dsgd's
// convolution, pooling/LRN and softmax primitives over them.
#ifndef DSGD_DNNL_IMPL_H
#define DSGD_DNNL_IMPL_H
#include <stdint.h>
#include <oneapi/dnnl/dnnl.h>

typedef struct {
	dnnl_memory_t user, inner;
	dnnl_primitive_t reorder;
	int wei; // a weight port: its time counts apart from the activations'
} port_t;

typedef struct {
	dnnl_stream_t s;
	int bias;
	dnnl_primitive_t fwd, bwd_d, bwd_w;
	port_t f_src, f_wei, f_bia, f_dst;
	port_t d_ddst, d_wei, d_dsrc;
	port_t w_src, w_ddst, w_dwei, w_dbia;
	dnnl_memory_t pad_f, pad_d, pad_w; // each primitive's scratchpad: a handle lent a pool buffer per call
	size_t pad_n[3];                   // their sizes in bytes
	int w_src_from_fwd;   // the weights pass reads the forward pass's reordered src
	int w_ddst_from_data; // the weights pass reads the data pass's reordered diff_dst
	char impl_f[64], impl_d[64], impl_w[64]; // oneDNN's names of the three implementations
} conv_t;

typedef struct {
	dnnl_stream_t s;
	dnnl_primitive_t fwd, bwd;
	port_t src, dst, ddst, dsrc;
	dnnl_memory_t ws, pad_f, pad_b;
	int lrn; // backward reads the forward input too
	char impl_f[64], impl_b[64]; // oneDNN's names of the forward and backward implementations
} pool_t;

typedef struct {
	dnnl_stream_t s;
	dnnl_primitive_t fwd, bwd;
	dnnl_memory_t src, dst, ddst, dsrc, pad_f, pad_b;
} softmax_t;

const char *dsgd_dnnl_bind(void *h);
int dsgd_dnnl_isa(void);
void dsgd_dnnl_version(int *v);
int64_t dsgd_reorder_ns(int wei);
conv_t *dsgd_conv_create(const int64_t *v, int g, int bias, int flags, const char **why);
void dsgd_conv_free(conv_t *c);
void dsgd_conv_forward(conv_t *c, float *src, float *wei, float *bia, float *dst);
void dsgd_conv_backward(conv_t *c, float *src, float *ddst, float *wei, float *dsrc, float *dwei, float *dbia, int fresh);
void dsgd_pool_free(pool_t *p);
pool_t *dsgd_pool_create(const int64_t *v, int max, int blk, const char **why);
pool_t *dsgd_lrn_create(const int64_t *v, int size, float alpha, float beta, float k, int blk, const char **why);
void dsgd_pool_forward(pool_t *p, float *src, float *dst);
void dsgd_pool_backward(pool_t *p, float *src, float *ddst, float *dsrc);
void dsgd_softmax_free(softmax_t *p);
softmax_t *dsgd_softmax_create(int64_t outer, int64_t c, int64_t inner, const char **why, const char **impl);
void dsgd_softmax_forward(softmax_t *p, float *src, float *dst);
void dsgd_softmax_backward(softmax_t *p, float *dst, float *ddst, float *dsrc);

#endif
