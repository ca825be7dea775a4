//go:build !purego

package cuda

/*
#include "gpu.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// Buffer-based calls, for the package's tests and simple users.

// Alloc allocates n float32s on the GPU.
func (g *GPU) Alloc(n int) (*Buffer, error) {
	p, err := g.Malloc(n)
	if err != nil {
		return nil, err
	}
	return &Buffer{g: g, Ptr: p, n: n}, nil
}

// Len is the buffer's length in float32s.
func (b *Buffer) Len() int { return b.n }

// Free frees the buffer.
func (b *Buffer) Free() error { return b.g.MFree(b.Ptr) }

// Upload copies src (at most Len floats) to the buffer's start.
func (b *Buffer) Upload(src []float32) error {
	if len(src) > b.n {
		return fmt.Errorf("cuda: uploading %d floats into %d", len(src), b.n)
	}
	return b.g.ToDevice(b.Ptr, src)
}

// Download copies the buffer's first len(dst) floats into dst.
func (b *Buffer) Download(dst []float32) error {
	if len(dst) > b.n {
		return fmt.Errorf("cuda: downloading %d floats from %d", len(dst), b.n)
	}
	return b.g.ToHost(dst, b.Ptr)
}

// Sgemm computes row-major C (m×n) = alpha·A (m×k)·B (k×n) + beta·C on the
// GPU, as tensor's GEMM does on the CPU; it returns once it is queued
// (Sync waits).
func (g *GPU) Sgemm(m, n, k int, alpha float32, a, b *Buffer, beta float32, c *Buffer) error {
	if m <= 0 || n <= 0 || k <= 0 || a.n < m*k || b.n < k*n || c.n < m*n {
		return fmt.Errorf("cuda: Sgemm %d×%d×%d with buffers of %d, %d and %d floats", m, n, k, a.n, b.n, c.n)
	}
	return g.Gemm(false, false, m, n, k, alpha, a.Ptr, k, b.Ptr, n, beta, c.Ptr, n)
}

// The kernels (kernels/kernels.cu), each over NCHW blobs as on the CPU.

// AddScalar adds v to n floats at y.
func (g *GPU) AddScalar(n int, y Ptr, v float32) error { return g.launch(kAddScalar, n, 0, n, y, v) }

// ReLU writes y = x > 0 ? x : slope·x over n floats (x may be y).
func (g *GPU) ReLU(n int, x, y Ptr, slope float32) error {
	return g.launch(kReLUFwd, n, 0, n, x, y, slope)
}

// ReLUBackward writes dx = dy·(x > 0 ? 1 : slope).
func (g *GPU) ReLUBackward(n int, x, dy, dx Ptr, slope float32) error {
	return g.launch(kReLUBwd, n, 0, n, x, dy, dx, slope)
}

// MaxPool writes Caffe's MAX pooling of x into y and each window's
// argmax (its index within the plane) into mask (int32s).
func (g *GPU) MaxPool(p Pool, x, y, mask Ptr) error {
	n := p.Planes * p.PH * p.PW
	return g.launch(kMaxPoolFwd, n, 0, n, x, p.H, p.W, p.PH, p.PW, p.KH, p.KW, p.SH, p.SW, p.PadH, p.PadW, y, mask)
}

// MaxPoolBackward writes dx from dy and the forward pass's mask.
func (g *GPU) MaxPoolBackward(p Pool, dy, mask, dx Ptr) error {
	n := p.Planes * p.H * p.W
	return g.launch(kMaxPoolBwd, n, 0, n, dy, mask, p.H, p.W, p.PH, p.PW, p.KH, p.KW, p.SH, p.SW, p.PadH, p.PadW, dx)
}

// AvePool writes Caffe's AVE pooling of x into y.
func (g *GPU) AvePool(p Pool, x, y Ptr) error {
	n := p.Planes * p.PH * p.PW
	return g.launch(kAvePoolFwd, n, 0, n, x, p.H, p.W, p.PH, p.PW, p.KH, p.KW, p.SH, p.SW, p.PadH, p.PadW, y)
}

// AvePoolBackward writes dx from dy.
func (g *GPU) AvePoolBackward(p Pool, dy, dx Ptr) error {
	n := p.Planes * p.H * p.W
	return g.launch(kAvePoolBwd, n, 0, n, dy, p.H, p.W, p.PH, p.PW, p.KH, p.KW, p.SH, p.SW, p.PadH, p.PadW, dx)
}

// Dropout keeps each of n values of x, scaled by 1/(1−ratio), where a
// hash of (seed, index) falls at or above ratio, writing y and mask
// (uint32s, 1 where kept).
func (g *GPU) Dropout(n int, x, y, mask Ptr, ratio float32, seed uint64) error {
	th := uint32(math.Min(float64(ratio)*(1<<32), math.MaxUint32))
	return g.launch(kDropoutFwd, n, 0, n, x, y, mask, th, 1/(1-ratio), uint32(seed), uint32(seed>>32))
}

// DropoutBackward writes dx = dy/(1−ratio) where kept, else 0.
func (g *GPU) DropoutBackward(n int, dy, mask, dx Ptr, ratio float32) error {
	return g.launch(kDropoutBwd, n, 0, n, dy, mask, dx, 1/(1-ratio))
}

// BNStats writes the per-channel mean and mean squared deviation of x
// [num, c, spatial], in two passes as on the CPU; scratch holds
// 2·c·ChanParts floats.
func (g *GPU) BNStats(x Ptr, num, c, spatial int, mean, variance, scratch Ptr) error {
	parts := ChanParts(c, num*spatial)
	m := float32(max(num*spatial, 1))
	if err := g.launch(kChanPart, 0, c*parts, x, Ptr(0), Ptr(0), num, c, spatial, parts, scratch, Ptr(0), Ptr(0), float32(0)); err != nil {
		return err
	}
	if err := g.launch(kChanFinal, c, 0, c, parts, scratch, Ptr(0), 1/m, 0, mean, Ptr(0)); err != nil {
		return err
	}
	if err := g.launch(kChanPart, 0, c*parts, x, Ptr(0), mean, num, c, spatial, parts, scratch, Ptr(0), Ptr(0), float32(0)); err != nil {
		return err
	}
	return g.launch(kChanFinal, c, 0, c, parts, scratch, Ptr(0), 1/m, 0, variance, Ptr(0))
}

// BNGlobal turns Caffe's stored statistics into a mean and variance.
func (g *GPU) BNGlobal(c int, smean, svar, factor, mean, variance Ptr) error {
	return g.launch(kBNGlobal, c, 0, c, smean, svar, factor, mean, variance)
}

// BNStd writes std = sqrt(var + eps).
func (g *GPU) BNStd(c int, variance Ptr, eps float32, std Ptr) error {
	return g.launch(kBNStd, c, 0, c, variance, eps, std)
}

// BNUpdate folds a batch's statistics into Caffe's stored ones.
func (g *GPU) BNUpdate(c int, mean, variance Ptr, maf, correction float32, smean, svar, factor Ptr) error {
	return g.launch(kBNUpdate, c, 0, c, mean, variance, maf, correction, smean, svar, factor)
}

// BNForward writes y = (x − mean)·(1/std) over n values of [.., c,
// spatial], and the same into xn when it is not 0.
func (g *GPU) BNForward(n int, x Ptr, c, spatial int, mean, std, y, xn Ptr) error {
	return g.launch(kBNFwd, n, 0, n, x, c, spatial, mean, std, y, xn)
}

// ChanSums writes (acc: adds) a[c] = k·Σdy and, when x is not 0,
// b[c] = k·Σdy·x over each channel of [num, c, spatial]; a or b may be 0.
// scratch holds 2·c·ChanParts floats.
func (g *GPU) ChanSums(dy, x Ptr, num, c, spatial int, k float32, acc bool, a, b, scratch Ptr) error {
	parts := ChanParts(c, num*spatial)
	pb := Ptr(0)
	if x != 0 {
		pb = scratch.Add(c * parts)
	}
	if err := g.launch(kChanPart, 0, c*parts, dy, x, Ptr(0), num, c, spatial, parts, scratch, pb, Ptr(0), float32(0)); err != nil {
		return err
	}
	return g.launch(kChanFinal, c, 0, c, parts, scratch, pb, k, b2i(acc), a, b)
}

// BNFusedForward is a BatchNorm with the in-place Scale (s, bias) and
// optionally ReLU (slope) after it, in one pass: xn the normalised
// values, y the Scale's (and ReLU's) output.
func (g *GPU) BNFusedForward(n int, x Ptr, c, spatial int, mean, std, s, bias Ptr, relu bool, slope float32, y, xn Ptr) error {
	return g.launch(kBNFusedFwd, n, 0, n, x, c, spatial, mean, std, s, bias, b2i(relu), slope, y, xn)
}

// BNFusedBackward is their backward pass: the channel sums of the
// ReLU-gated gradient g (y is the ReLU's output, 0 without one) and of
// g·xn added to the Scale's gradients ds and db (each 0 to skip), then
// the input gradient into dx. sums holds 2·c floats, scratch
// 2·c·ChanParts.
func (g *GPU) BNFusedBackward(dy, y Ptr, slope float32, xn Ptr, num, c, spatial int, s, std, ds, db, dx, sums, scratch Ptr) error {
	parts := ChanParts(c, num*spatial)
	pb := scratch.Add(c * parts)
	if err := g.launch(kChanPart, 0, c*parts, dy, xn, Ptr(0), num, c, spatial, parts, scratch, pb, y, slope); err != nil {
		return err
	}
	if ds != 0 || db != 0 {
		if err := g.launch(kChanFinal, c, 0, c, parts, scratch, pb, float32(1), 1, db, ds); err != nil {
			return err
		}
	}
	if err := g.launch(kChanFinal, c, 0, c, parts, scratch, pb, float32(1), 0, sums, sums.Add(c)); err != nil {
		return err
	}
	if dx == 0 {
		return nil
	}
	n := num * c * spatial
	return g.launch(kBNFusedBwd, n, 0, n, dy, y, slope, xn, c, spatial, s, sums, sums.Add(c), 1/float32(max(num*spatial, 1)), std, dx)
}

// BNBackward writes dx = (dy − a − b·xn)/std, or dy/std when a is 0.
func (g *GPU) BNBackward(n int, dy, xn Ptr, c, spatial int, a, b, std, dx Ptr) error {
	return g.launch(kBNBwd, n, 0, n, dy, xn, c, spatial, a, b, std, dx)
}

// Scale writes y = x·s[c] (+ bias[c] when bias is not 0) over n values
// of [outer, c, inner].
func (g *GPU) Scale(n int, x, s, bias Ptr, c, inner int, y Ptr) error {
	return g.launch(kScaleFwd, n, 0, n, x, s, bias, c, inner, y)
}

// CopyRows copies rows rows of length floats from src (row stride
// sstride) to dst (row stride dstride).
func (g *GPU) CopyRows(rows, length int, src Ptr, sstride int, dst Ptr, dstride int) error {
	n := rows * length
	return g.launch(kCopyRows, n, 0, n, src, sstride, dst, dstride, length)
}

// Conv is a 2-D convolution on cuDNN, its algorithms chosen by measuring
// them (cudnnFind…) once, the fastest deterministic one that fits the
// workspace limit first.
type Conv struct {
	g *GPU
	c C.dsgd_conv
	// Algo names the chosen algorithms and their measured times.
	Algo string
	// Workspace is the most workspace, in bytes, the algorithms need.
	Workspace int64
}

// SetFastest makes the convolutions set up after it take cuDNN's fastest
// algorithms even where they are not deterministic (a backward-filter
// algorithm that adds with atomics gives other last bits each run); the
// default takes the fastest deterministic one, so that a run repeats.
func (g *GPU) SetFastest(on bool) { g.g.fastest = C.int(b2i(on)) }

// NewConv sets up a convolution; wsLimit bounds the workspace an
// algorithm may ask for.
func (g *GPU) NewConv(q ConvGeom, wsLimit int64) (*Conv, error) {
	if !g.HasDNN() {
		return nil, errNoDNN
	}
	geom := [17]C.int{C.int(q.N), C.int(q.C), C.int(q.H), C.int(q.W), C.int(q.K), C.int(q.KH), C.int(q.KW), C.int(q.OH), C.int(q.OW),
		C.int(q.PadH), C.int(q.PadW), C.int(q.StrideH), C.int(q.StrideW), C.int(max(q.DilationH, 1)), C.int(max(q.DilationW, 1)),
		C.int(max(q.Groups, 1)), C.int(b2i(q.Bias))}
	c := &Conv{g: g}
	if r := C.dsgd_conv_setup(g.g, &c.c, &geom[0], C.size_t(wsLimit)); r != 0 {
		C.dsgd_conv_destroy(g.g, &c.c)
		return nil, g.err(fmt.Sprintf("a %dx%d convolution of %dx%dx%dx%d into %d", q.KH, q.KW, q.N, q.C, q.H, q.W, q.K), r)
	}
	c.Algo = fmt.Sprintf("fwd algo %d (%.3f ms), bwd-data %d (%.3f ms), bwd-filter %d (%.3f ms)",
		c.c.fwd, float32(c.c.ms_fwd), c.c.bwd_data, float32(c.c.ms_bwd_data), c.c.bwd_filter, float32(c.c.ms_bwd_filter))
	c.Workspace = int64(max(c.c.ws_fwd, c.c.ws_bwd_data, c.c.ws_bwd_filter))
	return c, nil
}

// Close frees the descriptors.
func (c *Conv) Close() error {
	return c.g.err("destroying a convolution", C.dsgd_conv_destroy(c.g.g, &c.c))
}

// Forward writes y = conv(x, w) (+ b when b is not 0).
func (c *Conv) Forward(x, w, b, y Ptr) error {
	return c.g.err("cudnnConvolutionForward", C.dsgd_conv_fwd(c.g.g, &c.c, C.devptr(x), C.devptr(w), C.devptr(b), C.devptr(y)))
}

// Backward adds the filter and bias gradients into dw and db and writes
// the input gradient into dx; a 0 address skips that gradient.
func (c *Conv) Backward(x, w, dy, dx, dw, db Ptr) error {
	return c.g.err("cudnnConvolutionBackward", C.dsgd_conv_bwd(c.g.g, &c.c, C.devptr(x), C.devptr(w), C.devptr(dy), C.devptr(dx), C.devptr(dw), C.devptr(db)))
}

// LRN is Caffe's LRN across channels on cuDNN (the same formula:
// x/(k + alpha/size·Σx²)^beta over size channels).
type LRN struct {
	g *GPU
	l C.dsgd_lrn
}

// NewLRN sets up an LRN over N×C×H×W blobs.
func (g *GPU) NewLRN(n, c, h, w, size int, alpha, beta, k float64) (*LRN, error) {
	if !g.HasDNN() {
		return nil, errNoDNN
	}
	l := &LRN{g: g}
	if r := C.dsgd_lrn_setup(g.g, &l.l, C.int(n), C.int(c), C.int(h), C.int(w), C.int(size), C.double(alpha), C.double(beta), C.double(k)); r != 0 {
		C.dsgd_lrn_destroy(g.g, &l.l)
		return nil, g.err("cudnnSetLRNDescriptor", r)
	}
	return l, nil
}

// Close frees the descriptors.
func (l *LRN) Close() error { return l.g.err("destroying an LRN", C.dsgd_lrn_destroy(l.g.g, &l.l)) }

// Forward writes y = LRN(x).
func (l *LRN) Forward(x, y Ptr) error {
	return l.g.err("cudnnLRNCrossChannelForward", C.dsgd_lrn_fwd(l.g.g, &l.l, C.devptr(x), C.devptr(y)))
}

// Backward writes dx from x, y and dy.
func (l *LRN) Backward(x, y, dy, dx Ptr) error {
	return l.g.err("cudnnLRNCrossChannelBackward", C.dsgd_lrn_bwd(l.g.g, &l.l, C.devptr(x), C.devptr(y), C.devptr(dy), C.devptr(dx)))
}

// SoftmaxLoss is Caffe's SoftmaxWithLoss over an outer×channels×inner
// blob: cuDNN's accurate softmax, then the loss per position and its
// normalised sum on the GPU.
type SoftmaxLoss struct {
	g                      *GPU
	desc                   unsafe.Pointer
	outer, channels, inner int
	hasIgnore              bool
	ignore                 float32
	mode                   int
}

// NewSoftmaxLoss sets one up; mode is Caffe's normalisation (0 VALID, 1
// BATCH_SIZE, 2 FULL, 3 NONE).
func (g *GPU) NewSoftmaxLoss(outer, channels, inner int, hasIgnore bool, ignore int, mode int) (*SoftmaxLoss, error) {
	if !g.HasDNN() {
		return nil, errNoDNN
	}
	s := &SoftmaxLoss{g: g, outer: outer, channels: channels, inner: inner, hasIgnore: hasIgnore, ignore: float32(ignore), mode: mode}
	if r := C.dsgd_softmax_setup(g.g, &s.desc, C.int(outer), C.int(channels), C.int(inner)); r != 0 {
		C.dsgd_softmax_destroy(g.g, s.desc)
		return nil, g.err("a softmax's descriptor", r)
	}
	return s, nil
}

// Close frees the descriptor.
func (s *SoftmaxLoss) Close() error {
	return s.g.err("destroying a softmax", C.dsgd_softmax_destroy(s.g.g, s.desc))
}

// Forward writes the probabilities of x into prob, each position's loss
// and validity into scratch (2·outer·inner floats), and the normalised
// loss and the normaliser into out[0] and out[1].
func (s *SoftmaxLoss) Forward(x, label, prob, scratch, out Ptr) error {
	if err := s.g.err("cudnnSoftmaxForward", C.dsgd_softmax_fwd(s.g.g, s.desc, C.devptr(x), C.devptr(prob))); err != nil {
		return err
	}
	n := s.outer * s.inner
	if err := s.g.launch(kSMLoss, n, 0, n, s.channels, s.inner, prob, label, b2i(s.hasIgnore), s.ignore, scratch, scratch.Add(n)); err != nil {
		return err
	}
	return s.g.launch(kSMTotal, 0, 1, n, scratch, scratch.Add(n), s.mode, s.outer, out)
}

// Backward writes dx = (prob − onehot)·topDiff[0]/out[1].
func (s *SoftmaxLoss) Backward(prob, label, topDiff, out, dx Ptr) error {
	n := s.outer * s.channels * s.inner
	return s.g.launch(kSMBwd, n, 0, n, s.channels, s.inner, prob, label, b2i(s.hasIgnore), s.ignore, topDiff, out.Add(1), dx)
}
