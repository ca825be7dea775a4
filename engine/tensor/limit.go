package tensor

import (
	"fmt"
	"math"
	"sync/atomic"
)

// memLimit is the most bytes one blob's storage may take (see
// SetMemoryLimit); 0 means no limit beyond integer overflow.
var memLimit atomic.Int64

// SetMemoryLimit sets the most bytes a blob's storage (data and diff) may
// take; a Reshape past it panics with a *SizeError that model.Build turns
// into an error naming the layer. Zero removes the limit. dsgd sets it to
// the machine's memory, so that a net too large for it is refused with the
// figure instead of dying of a fatal out-of-memory.
func SetMemoryLimit(bytes int64) { memLimit.Store(bytes) }

// MemoryLimit is the limit SetMemoryLimit set (0: none).
func MemoryLimit() int64 { return memLimit.Load() }

// SizeError is the panic value of a Reshape whose element count overflows
// an int or whose storage would exceed the memory limit.
type SizeError struct {
	Blob  string
	Shape []int
	// Bytes is the storage the shape needs (data and diff), +Inf when its
	// count overflows.
	Bytes float64
	Limit int64
}

func (e *SizeError) Error() string {
	if math.IsInf(e.Bytes, 1) {
		return fmt.Sprintf("blob %q of shape %v: the element count overflows", e.Blob, e.Shape)
	}
	return fmt.Sprintf("blob %q of shape %v needs %s (data and diff), more than the %s this machine has", e.Blob, e.Shape, HumanBytes(e.Bytes), HumanBytes(float64(e.Limit)))
}

// HumanBytes formats a byte count with a binary unit ("1.5 GiB").
func HumanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}

// SafeCount is the product of dims and true, or 0 and false when it
// overflows an int (or a dimension is negative).
func SafeCount(dims []int) (int, bool) {
	n := 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// checkSize panics with a *SizeError when a blob of shape cannot be
// allocated: its count overflows, or data and diff exceed the limit.
func checkSize(name string, shape []int) {
	n, ok := SafeCount(shape)
	bytes := math.Inf(1)
	if ok && n <= math.MaxInt/8 {
		bytes = 8 * float64(n)
	}
	lim := memLimit.Load()
	if math.IsInf(bytes, 1) || (lim > 0 && bytes > float64(lim)) {
		panic(&SizeError{Blob: name, Shape: append([]int(nil), shape...), Bytes: bytes, Limit: lim})
	}
}
