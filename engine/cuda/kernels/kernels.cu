// The device kernels of dsgd's GPU engine: what cuDNN and cuBLAS do not
// do with Caffe's exact semantics. Compiled to PTX by `make ptx` (clang,
// with no CUDA headers or libdevice: the few built-ins it needs are
// spelled out below) into kernels.ptx, which the package embeds and the
// driver compiles for the GPU it finds (cuModuleLoadData): no CUDA
// compiler is needed where dsgd runs. PTX 6.0 for sm_70 loads on every
// driver since CUDA 9 and every GPU since Volta.
//
// Every kernel is a grid-stride loop over its outputs, so any grid size
// covers any count; layouts are NCHW as on the CPU.

#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define TID ((int)__nvvm_read_ptx_sreg_tid_x())
#define BID ((int)__nvvm_read_ptx_sreg_ctaid_x())
#define BDIM ((int)__nvvm_read_ptx_sreg_ntid_x())
#define GDIM ((int)__nvvm_read_ptx_sreg_nctaid_x())
#define LOOP(i, n) for (int i = BID * BDIM + TID; i < (n); i += BDIM * GDIM)

static __attribute__((device)) int imin(int a, int b) { return a < b ? a : b; }
static __attribute__((device)) int imax(int a, int b) { return a > b ? a : b; }

// fill: y[i] = v.
extern "C" __global__ void dsgd_fill(int n, float *y, float v) {
	LOOP(i, n) y[i] = v;
}

// add_scalar: y[i] += v (a loss weight added back to a gradient).
extern "C" __global__ void dsgd_add_scalar(int n, float *y, float v) {
	LOOP(i, n) y[i] += v;
}

// relu_fwd: y = x > 0 ? x : slope·x (Caffe's ReLU, leaky when slope != 0;
// x and y may be the same buffer).
extern "C" __global__ void dsgd_relu_fwd(int n, const float *x, float *y, float slope) {
	LOOP(i, n) {
		float v = x[i];
		y[i] = v > 0 ? v : v * slope;
	}
}

// relu_bwd: dx = dy · (x > 0 ? 1 : slope), x being the bottom (or, in
// place, the top, which is positive exactly where the bottom was).
extern "C" __global__ void dsgd_relu_bwd(int n, const float *x, const float *dy, float *dx, float slope) {
	LOOP(i, n) {
		float g = dy[i];
		dx[i] = x[i] > 0 ? g : g * slope;
	}
}

// maxpool_fwd: Caffe's MAX pooling over an [outer, h, w] stack of planes
// into [outer, ph, pw], the first maximum of each window winning, its
// index within the plane kept in mask for the backward pass (a NaN
// loses to any number, as on the CPU). Caffe's pooled sizes leave no
// window wholly in the padding.
extern "C" __global__ void dsgd_maxpool_fwd(int n, const float *x, int h, int w, int ph, int pw,
	int kh, int kw, int sh, int sw, int padh, int padw, float *y, int *mask) {
	LOOP(i, n) {
		int px = i % pw, py = (i / pw) % ph, p = i / pw / ph;
		int hs = py * sh - padh, ws = px * sw - padw;
		int he = imin(hs + kh, h), we = imin(ws + kw, w);
		hs = imax(hs, 0);
		ws = imax(ws, 0);
		const float *s = x + (long)p * h * w;
		int at = hs * w + ws;
		float m = s[at];
		for (int yy = hs; yy < he; yy++)
			for (int xx = ws; xx < we; xx++) {
				float v = s[yy * w + xx];
				if (v > m || (m != m && v == v)) {
					m = v;
					at = yy * w + xx;
				}
			}
		y[i] = m;
		mask[i] = at;
	}
}

// maxpool_bwd: each bottom element sums the gradients of the windows
// whose maximum it was (no atomics: it visits the windows covering it).
extern "C" __global__ void dsgd_maxpool_bwd(int n, const float *dy, const int *mask, int h, int w, int ph, int pw,
	int kh, int kw, int sh, int sw, int padh, int padw, float *dx) {
	LOOP(i, n) {
		int xx = i % w, yy = (i / w) % h, p = i / w / h;
		int py0 = (yy + padh < kh) ? 0 : (yy + padh - kh) / sh + 1;
		int py1 = imin((yy + padh) / sh + 1, ph);
		int px0 = (xx + padw < kw) ? 0 : (xx + padw - kw) / sw + 1;
		int px1 = imin((xx + padw) / sw + 1, pw);
		const float *g = dy + (long)p * ph * pw;
		const int *m = mask + (long)p * ph * pw;
		int me = yy * w + xx;
		float s = 0;
		for (int py = py0; py < py1; py++)
			for (int px = px0; px < px1; px++)
				if (m[py * pw + px] == me) s += g[py * pw + px];
		dx[i] = s;
	}
}

// avepool_fwd: Caffe's AVE pooling: the sum over the window's part inside
// the input, divided by the window's size clipped to the padded input.
extern "C" __global__ void dsgd_avepool_fwd(int n, const float *x, int h, int w, int ph, int pw,
	int kh, int kw, int sh, int sw, int padh, int padw, float *y) {
	LOOP(i, n) {
		int px = i % pw, py = (i / pw) % ph, p = i / pw / ph;
		int hs = py * sh - padh, ws = px * sw - padw;
		int he = imin(hs + kh, h + padh), we = imin(ws + kw, w + padw);
		int size = (he - hs) * (we - ws);
		hs = imax(hs, 0);
		ws = imax(ws, 0);
		he = imin(he, h);
		we = imin(we, w);
		const float *s = x + (long)p * h * w;
		float sum = 0;
		for (int yy = hs; yy < he; yy++)
			for (int xx = ws; xx < we; xx++) sum += s[yy * w + xx];
		y[i] = sum / size;
	}
}

// avepool_bwd: each bottom element sums dy/size over the windows covering it.
extern "C" __global__ void dsgd_avepool_bwd(int n, const float *dy, int h, int w, int ph, int pw,
	int kh, int kw, int sh, int sw, int padh, int padw, float *dx) {
	LOOP(i, n) {
		int xx = i % w + padw, yy = (i / w) % h + padh, p = i / w / h;
		int py0 = (yy < kh) ? 0 : (yy - kh) / sh + 1;
		int py1 = imin(yy / sh + 1, ph);
		int px0 = (xx < kw) ? 0 : (xx - kw) / sw + 1;
		int px1 = imin(xx / sw + 1, pw);
		const float *g = dy + (long)p * ph * pw;
		float s = 0;
		for (int py = py0; py < py1; py++)
			for (int px = px0; px < px1; px++) {
				int hs = py * sh - padh, ws = px * sw - padw;
				int he = imin(hs + kh, h + padh), we = imin(ws + kw, w + padw);
				s += g[py * pw + px] / ((he - hs) * (we - ws));
			}
		dx[i] = s;
	}
}

// mix is a 32-bit finaliser (murmur3's) for the counter-based dropout mask.
static __attribute__((device)) unsigned mix(unsigned h) {
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

// dropout_fwd: keeps x[i]·scale where the hash of (seed, i) is at or
// above threshold (ratio·2³²), zero elsewhere; mask records which.
extern "C" __global__ void dsgd_dropout_fwd(int n, const float *x, float *y, unsigned *mask,
	unsigned threshold, float scale, unsigned seed0, unsigned seed1) {
	LOOP(i, n) {
		unsigned r = mix(mix((unsigned)i ^ seed0) + seed1);
		unsigned keep = r >= threshold;
		mask[i] = keep;
		y[i] = keep ? x[i] * scale : 0;
	}
}

// dropout_bwd: dx = dy·scale where kept, zero elsewhere.
extern "C" __global__ void dsgd_dropout_bwd(int n, const float *dy, const unsigned *mask, float *dx, float scale) {
	LOOP(i, n) dx[i] = mask[i] ? dy[i] * scale : 0;
}

// block_sum reduces v over the block (256 threads): every thread gets
// the sum, added in a fixed order (so a run repeats its bits).
static __attribute__((device)) float block_sum(float v, float *sh) {
	int t = TID;
	sh[t] = v;
	__syncthreads();
	for (int s = BDIM / 2; s > 0; s >>= 1) {
		if (t < s) sh[t] += sh[t + s];
		__syncthreads();
	}
	float r = sh[0];
	__syncthreads();
	return r;
}

// chan_part: per-channel partial sums of [num, c, spatial] blobs, block
// ch·parts + p taking part p of channel ch's num·spatial values: with
// mean, pa = Σ (v − mean[ch])² over v of dy; else pa = Σ dy and, with x,
// pb = Σ dy·x. With gate (a ReLU's output), dy counts where the gate is
// positive and slope·dy elsewhere. chan_final adds the parts up.
extern "C" __global__ void dsgd_chan_part(const float *dy, const float *x, const float *mean, int num, int c, int spatial,
	int parts, float *pa, float *pb, const float *gate, float slope) {
	__shared__ float sh[256];
	int ch = BID / parts, p = BID % parts;
	long m = (long)num * spatial;
	long lo = m * p / parts, hi = m * (p + 1) / parts;
	float mu = mean ? mean[ch] : 0;
	float s = 0, q = 0;
	for (long j = lo + TID; j < hi; j += BDIM) {
		long at = ((j / spatial) * c + ch) * spatial + j % spatial;
		float g = dy[at];
		if (gate) g = gate[at] > 0 ? g : g * slope;
		if (mean) {
			g -= mu;
			s += g * g;
		} else {
			s += g;
			if (x) q += g * x[at];
		}
	}
	s = block_sum(s, sh);
	if (x && !mean) q = block_sum(q, sh);
	if (TID == 0) {
		pa[BID] = s;
		if (x && !mean) pb[BID] = q;
	}
}

// chan_final: a[ch] = k·Σ_p pa[ch·parts + p] (added to a[ch] with acc),
// and b from pb the same way when both are set.
extern "C" __global__ void dsgd_chan_final(int c, int parts, const float *pa, const float *pb, float k, int acc, float *a, float *b) {
	LOOP(ch, c) {
		float s = 0, q = 0;
		for (int p = 0; p < parts; p++) {
			s += pa[ch * parts + p];
			if (pb) q += pb[ch * parts + p];
		}
		if (a) a[ch] = acc ? a[ch] + s * k : s * k;
		if (pb && b) b[ch] = acc ? b[ch] + q * k : q * k;
	}
}

// bn_global: the stored statistics (sums weighted by the moving-average
// factor) as a mean and variance: stat·(1/factor), 0 when factor is 0.
extern "C" __global__ void dsgd_bn_global(int c, const float *smean, const float *svar, const float *factor, float *mean, float *var) {
	float f = factor[0], s = f != 0 ? 1 / f : 0;
	LOOP(i, c) {
		mean[i] = s * smean[i];
		var[i] = s * svar[i];
	}
}

// bn_std: std = sqrt(var + eps) (IEEE-rounded).
extern "C" __global__ void dsgd_bn_std(int c, const float *var, float eps, float *std) {
	LOOP(i, c) std[i] = __nvvm_sqrt_rn_f(var[i] + eps);
}

// bn_update: Caffe's moving statistics: factor = factor·maf + 1,
// mean = batch mean + maf·mean, var = correction·batch var + maf·var.
extern "C" __global__ void dsgd_bn_update(int c, const float *mean, const float *var, float maf, float correction,
	float *smean, float *svar, float *factor) {
	LOOP(i, c) {
		smean[i] = mean[i] + maf * smean[i];
		svar[i] = correction * var[i] + maf * svar[i];
	}
	if (BID == 0 && TID == 0) factor[0] = factor[0] * maf + 1;
}

// bn_fwd: y = (x − mean)·(1/std), and xn = y when xn is not null.
extern "C" __global__ void dsgd_bn_fwd(int n, const float *x, int c, int spatial, const float *mean, const float *std,
	float *y, float *xn) {
	LOOP(i, n) {
		int ch = (i / spatial) % c;
		float v = (x[i] - mean[ch]) * (1 / std[ch]);
		y[i] = v;
		if (xn) xn[i] = v;
	}
}

// bn_bwd: dx = (dy − a − b·xn)·(1/std) with batch statistics (a, b the
// channel means of dy and dy·xn), dy·(1/std) with global ones (a null).
extern "C" __global__ void dsgd_bn_bwd(int n, const float *dy, const float *xn, int c, int spatial,
	const float *a, const float *b, const float *std, float *dx) {
	LOOP(i, n) {
		int ch = (i / spatial) % c;
		float inv = 1 / std[ch];
		dx[i] = a ? (dy[i] - a[ch] - b[ch] * xn[i]) * inv : dy[i] * inv;
	}
}

// scale_fwd: y = x·s[c] + (bias ? bias[c] : 0) over [outer, c, inner].
extern "C" __global__ void dsgd_scale_fwd(int n, const float *x, const float *s, const float *bias, int c, int inner, float *y) {
	LOOP(i, n) {
		int ch = (i / inner) % c;
		float v = x[i] * s[ch];
		y[i] = bias ? v + bias[ch] : v;
	}
}

// copy_rows: n = rows·len floats, each row of len from src (row stride
// sstride) to dst (row stride dstride): Concat along an axis and back.
extern "C" __global__ void dsgd_copy_rows(int n, const float *src, int sstride, float *dst, int dstride, int len) {
	LOOP(i, n) {
		int r = i / len, j = i % len;
		dst[(long)r * dstride + j] = src[(long)r * sstride + j];
	}
}

// sm_loss: per position pos of an outer×c×inner softmax (prob): the loss
// −ln max(p[label], FLT_MIN) in loss[pos] and 1 in valid[pos], or 0 and 0
// where the label is the ignore label (has_ignore). Labels were checked
// on the host; an index outside [0, c) is clamped, not read past.
extern "C" __global__ void dsgd_sm_loss(int n, int c, int inner, const float *prob, const float *label,
	int has_ignore, float ignore, float *loss, float *valid) {
	LOOP(pos, n) {
		float v = label[pos];
		if (has_ignore && v == ignore) {
			loss[pos] = 0;
			valid[pos] = 0;
			continue;
		}
		int k = (int)v;
		k = k < 0 ? 0 : (k >= c ? c - 1 : k);
		int o = pos / inner, i = pos % inner;
		float p = prob[((long)o * c + k) * inner + i];
		p = p > 1.17549435e-38f ? p : 1.17549435e-38f;
		loss[pos] = -__nvvm_lg2_approx_f(p) * 0.693147180559945309f;
		valid[pos] = 1;
	}
}

// sm_total: one block: out[0] = Σ loss / norm and out[1] = norm, norm being
// Caffe's normaliser at least 1: mode 0 the valid count, 1 the batch
// (outer), 2 every position (n), 3 one.
extern "C" __global__ void dsgd_sm_total(int n, const float *loss, const float *valid, int mode, int outer, float *out) {
	__shared__ float sh[256];
	float s = 0, q = 0;
	for (int j = TID; j < n; j += BDIM) {
		s += loss[j];
		q += valid[j];
	}
	s = block_sum(s, sh);
	q = block_sum(q, sh);
	if (TID == 0) {
		float norm = mode == 0 ? q : mode == 1 ? (float)outer : mode == 2 ? (float)n : 1;
		norm = norm > 1 ? norm : 1;
		out[0] = s / norm;
		out[1] = norm;
	}
}

// sm_bwd: dx = (p − [j = label])·(top_diff[0]/norm[0]) over an
// outer×c×inner blob, 0 at ignored positions.
extern "C" __global__ void dsgd_sm_bwd(int n, int c, int inner, const float *prob, const float *label,
	int has_ignore, float ignore, const float *top_diff, const float *norm, float *dx) {
	float k = top_diff[0] / norm[0];
	LOOP(idx, n) {
		int i = idx % inner, j = (idx / inner) % c, o = idx / inner / c;
		float v = label[o * inner + i];
		if (has_ignore && v == ignore) {
			dx[idx] = 0;
			continue;
		}
		dx[idx] = (prob[idx] - (j == (int)v ? 1.0f : 0.0f)) * k;
	}
}

// bn_fused_fwd: a BatchNorm, the Scale after it and optionally the ReLU
// after that, all in place on one blob, in one pass: xn = (x − mean)·(1/std),
// y = xn·s[c] + bias[c], then y = y > 0 ? y : slope·y when relu.
extern "C" __global__ void dsgd_bn_fused_fwd(int n, const float *x, int c, int spatial, const float *mean, const float *std,
	const float *s, const float *bias, int relu, float slope, float *y, float *xn) {
	LOOP(i, n) {
		int ch = (i / spatial) % c;
		float v = (x[i] - mean[ch]) * (1 / std[ch]);
		xn[i] = v;
		v = v * s[ch];
		if (bias) v += bias[ch];
		if (relu) v = v > 0 ? v : v * slope;
		y[i] = v;
	}
}

// bn_fused_bwd: their input gradient: with g = dy gated by the ReLU's
// output (y, null without a ReLU), dx = s[c]·(g − sg[c]/m − xn·sgx[c]/m)·(1/std),
// sg and sgx being the channel sums of g and g·xn.
extern "C" __global__ void dsgd_bn_fused_bwd(int n, const float *dy, const float *y, float slope, const float *xn, int c, int spatial,
	const float *s, const float *sg, const float *sgx, float inv_m, const float *std, float *dx) {
	LOOP(i, n) {
		int ch = (i / spatial) % c;
		float g = dy[i];
		if (y) g = y[i] > 0 ? g : g * slope;
		dx[i] = s[ch] * (g - sg[ch] * inv_m - xn[i] * (sgx[ch] * inv_m)) * (1 / std[ch]);
	}
}
