//go:build purego

package dnnl

import (
	"errors"
	"time"
)

// Load reports that this build has no oneDNN.
func Load() error { return errors.New("oneDNN is not in the purego build") }

// Block is 0: no oneDNN in this build.
func Block() int { return 0 }

// Info is empty: no oneDNN in this build.
func Info() string { return "" }

// Conv is not available in the purego build.
type Conv struct{ spec ConvSpec }

// NewConv fails in the purego build.
func NewConv(s ConvSpec) (*Conv, error) { return nil, Load() }

// Spec is the geometry the Conv was built for.
func (c *Conv) Spec() ConvSpec { return c.spec }

// Close does nothing.
func (c *Conv) Close() {}

// Impl is empty: no Conv is ever built.
func (c *Conv) Impl() Impl { return Impl{} }

// Forward is never reached: NewConv fails.
func (c *Conv) Forward(src, wei, bias, dst []float32) { panic("dnnl: purego build") }

// Backward is never reached: NewConv fails.
func (c *Conv) Backward(src, ddst, wei, dsrc, dwei, dbias []float32, fresh bool) {
	panic("dnnl: purego build")
}

// Pool is not available in the purego build.
type Pool struct{ spec PoolSpec }

// NewPool fails in the purego build.
func NewPool(s PoolSpec) (*Pool, error) { return nil, Load() }

// Spec is the geometry the Pool was built for.
func (p *Pool) Spec() PoolSpec { return p.spec }

// Close does nothing.
func (p *Pool) Close() {}

// Impl is empty: no Pool is ever built.
func (p *Pool) Impl() Impl { return Impl{} }

// Forward is never reached: NewPool fails.
func (p *Pool) Forward(src, dst []float32) { panic("dnnl: purego build") }

// Backward is never reached: NewPool fails.
func (p *Pool) Backward(ddst, dsrc []float32) { panic("dnnl: purego build") }

// LRN is not available in the purego build.
type LRN struct{}

// NewLRN fails in the purego build.
func NewLRN(n, c, h, w, size int, alpha, beta, k float32) (*LRN, error) { return nil, Load() }

// Num is 0: no LRN is ever built.
func (l *LRN) Num() int { return 0 }

// Close does nothing.
func (l *LRN) Close() {}

// Impl is empty: no LRN is ever built.
func (l *LRN) Impl() Impl { return Impl{} }

// Forward is never reached: NewLRN fails.
func (l *LRN) Forward(src, dst []float32) { panic("dnnl: purego build") }

// Backward is never reached: NewLRN fails.
func (l *LRN) Backward(src, ddst, dsrc []float32) { panic("dnnl: purego build") }

// Softmax is not available in the purego build.
type Softmax struct{}

// NewSoftmax fails in the purego build.
func NewSoftmax(outer, channels, inner int) (*Softmax, error) { return nil, Load() }

// Close does nothing.
func (s *Softmax) Close() {}

// Forward is never reached: NewSoftmax fails.
func (s *Softmax) Forward(src, dst []float32) { panic("dnnl: purego build") }

// Backward is never reached: NewSoftmax fails.
func (s *Softmax) Backward(dst, ddst, dsrc []float32) { panic("dnnl: purego build") }

// ReorderTime is 0: no oneDNN in this build.
func ReorderTime() time.Duration { return 0 }

// WeightReorderTime is 0: no oneDNN in this build.
func WeightReorderTime() time.Duration { return 0 }
