//go:build purego

package cuda

import "errors"

// errPurego is every GPU call's error in a purego build.
var errPurego = errors.New("cuda: no GPU in a purego build (it opens no C library)")

// GPU is a device opened for computing; a purego build has none.
type GPU struct {
	Device
	// TF32 is never set in a purego build.
	TF32 bool
}

// Buffer is float32 memory on a GPU; a purego build has none.
type Buffer struct {
	// Ptr is its device address.
	Ptr Ptr
}

// Conv is a convolution on cuDNN; a purego build has none.
type Conv struct {
	// Algo and Workspace are empty.
	Algo      string
	Workspace int64
}

// LRN is an LRN on cuDNN; a purego build has none.
type LRN struct{}

// Open says that a purego build opens no GPU.
func Open(index int, tf32 bool) (*GPU, error) {
	_, err := Probe()
	return nil, errors.Join(err, errPurego)
}

// HasDNN is false.
func (g *GPU) HasDNN() bool { return false }

// Close does nothing.
func (g *GPU) Close() error { return nil }

// MemInfo fails.
func (g *GPU) MemInfo() (free, total int64, err error) { return 0, 0, errPurego }

// Malloc fails.
func (g *GPU) Malloc(n int) (Ptr, error) { return 0, errPurego }

// MFree fails.
func (g *GPU) MFree(p Ptr) error { return errPurego }

// ToDevice fails.
func (g *GPU) ToDevice(dst Ptr, src []float32) error { return errPurego }

// ToHost fails.
func (g *GPU) ToHost(dst []float32, src Ptr) error { return errPurego }

// Copy fails.
func (g *GPU) Copy(dst, src Ptr, n int) error { return errPurego }

// Fill fails.
func (g *GPU) Fill(dst Ptr, n int, v float32) error { return errPurego }

// Sync does nothing.
func (g *GPU) Sync() error { return nil }

// Gemm fails.
func (g *GPU) Gemm(ta, tb bool, m, n, k int, alpha float32, a Ptr, lda int, b Ptr, ldb int, beta float32, c Ptr, ldc int) error {
	return errPurego
}

// Gemv fails.
func (g *GPU) Gemv(ta bool, m, n int, alpha float32, a, x Ptr, beta float32, y Ptr) error {
	return errPurego
}

// Axpy fails.
func (g *GPU) Axpy(n int, alpha float32, x, y Ptr) error { return errPurego }

// Scal fails.
func (g *GPU) Scal(n int, alpha float32, x Ptr) error { return errPurego }

// Ones fails.
func (g *GPU) Ones(n int) (Ptr, error) { return 0, errPurego }

// Alloc fails.
func (g *GPU) Alloc(n int) (*Buffer, error) { return nil, errPurego }

// Len is 0.
func (b *Buffer) Len() int { return 0 }

// Free does nothing.
func (b *Buffer) Free() error { return nil }

// Upload fails.
func (b *Buffer) Upload(src []float32) error { return errPurego }

// Download fails.
func (b *Buffer) Download(dst []float32) error { return errPurego }

// Sgemm fails.
func (g *GPU) Sgemm(m, n, k int, alpha float32, a, b *Buffer, beta float32, c *Buffer) error {
	return errPurego
}

// AddScalar fails.
func (g *GPU) AddScalar(n int, y Ptr, v float32) error { return errPurego }

// ReLU fails.
func (g *GPU) ReLU(n int, x, y Ptr, slope float32) error { return errPurego }

// ReLUBackward fails.
func (g *GPU) ReLUBackward(n int, x, dy, dx Ptr, slope float32) error { return errPurego }

// MaxPool fails.
func (g *GPU) MaxPool(p Pool, x, y, mask Ptr) error { return errPurego }

// MaxPoolBackward fails.
func (g *GPU) MaxPoolBackward(p Pool, dy, mask, dx Ptr) error { return errPurego }

// AvePool fails.
func (g *GPU) AvePool(p Pool, x, y Ptr) error { return errPurego }

// AvePoolBackward fails.
func (g *GPU) AvePoolBackward(p Pool, dy, dx Ptr) error { return errPurego }

// Dropout fails.
func (g *GPU) Dropout(n int, x, y, mask Ptr, ratio float32, seed uint64) error { return errPurego }

// DropoutBackward fails.
func (g *GPU) DropoutBackward(n int, dy, mask, dx Ptr, ratio float32) error { return errPurego }

// BNStats fails.
func (g *GPU) BNStats(x Ptr, num, c, spatial int, mean, variance, scratch Ptr) error {
	return errPurego
}

// BNGlobal fails.
func (g *GPU) BNGlobal(c int, smean, svar, factor, mean, variance Ptr) error { return errPurego }

// BNStd fails.
func (g *GPU) BNStd(c int, variance Ptr, eps float32, std Ptr) error { return errPurego }

// BNUpdate fails.
func (g *GPU) BNUpdate(c int, mean, variance Ptr, maf, correction float32, smean, svar, factor Ptr) error {
	return errPurego
}

// BNForward fails.
func (g *GPU) BNForward(n int, x Ptr, c, spatial int, mean, std, y, xn Ptr) error { return errPurego }

// ChanSums fails.
func (g *GPU) ChanSums(dy, x Ptr, num, c, spatial int, k float32, acc bool, a, b, scratch Ptr) error {
	return errPurego
}

// BNBackward fails.
func (g *GPU) BNBackward(n int, dy, xn Ptr, c, spatial int, a, b, std, dx Ptr) error {
	return errPurego
}

// Scale fails.
func (g *GPU) Scale(n int, x, s, bias Ptr, c, inner int, y Ptr) error { return errPurego }

// CopyRows fails.
func (g *GPU) CopyRows(rows, length int, src Ptr, sstride int, dst Ptr, dstride int) error {
	return errPurego
}

// SetFastest does nothing.
func (g *GPU) SetFastest(on bool) {}

// NewConv fails.
func (g *GPU) NewConv(q ConvGeom, wsLimit int64) (*Conv, error) { return nil, errPurego }

// Close does nothing.
func (c *Conv) Close() error { return nil }

// Forward fails.
func (c *Conv) Forward(x, w, b, y Ptr) error { return errPurego }

// Backward fails.
func (c *Conv) Backward(x, w, dy, dx, dw, db Ptr) error { return errPurego }

// NewLRN fails.
func (g *GPU) NewLRN(n, c, h, w, size int, alpha, beta, k float64) (*LRN, error) {
	return nil, errPurego
}

// Close does nothing.
func (l *LRN) Close() error { return nil }

// Forward fails.
func (l *LRN) Forward(x, y Ptr) error { return errPurego }

// Backward fails.
func (l *LRN) Backward(x, y, dy, dx Ptr) error { return errPurego }

// SoftmaxLoss is a softmax loss on cuDNN; a purego build has none.
type SoftmaxLoss struct{}

// NewSoftmaxLoss fails.
func (g *GPU) NewSoftmaxLoss(outer, channels, inner int, hasIgnore bool, ignore int, mode int) (*SoftmaxLoss, error) {
	return nil, errPurego
}

// Close does nothing.
func (s *SoftmaxLoss) Close() error { return nil }

// Forward fails.
func (s *SoftmaxLoss) Forward(x, label, prob, scratch, out Ptr) error { return errPurego }

// Backward fails.
func (s *SoftmaxLoss) Backward(prob, label, topDiff, out, dx Ptr) error { return errPurego }

// BNFusedForward fails.
func (g *GPU) BNFusedForward(n int, x Ptr, c, spatial int, mean, std, s, bias Ptr, relu bool, slope float32, y, xn Ptr) error {
	return errPurego
}

// BNFusedBackward fails.
func (g *GPU) BNFusedBackward(dy, y Ptr, slope float32, xn Ptr, num, c, spatial int, s, std, ds, db, dx, sums, scratch Ptr) error {
	return errPurego
}
