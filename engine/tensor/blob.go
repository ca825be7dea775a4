package tensor

import (
	"fmt"
	"strings"
)

// Shape is a blob's dimensions, outermost first (Caffe's N, C, H, W order).
type Shape []int

// Count is the number of elements a blob of this shape holds: the product of
// the dimensions (1 for a scalar, empty shape).
func (s Shape) Count() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// CountFrom is the product of the dimensions from axis on.
func (s Shape) CountFrom(axis int) int { return s[axis:].Count() }

// CountRange is the product of the dimensions in [from, to).
func (s Shape) CountRange(from, to int) int { return s[from:to].Count() }

// Equal reports whether two shapes have the same dimensions.
func (s Shape) Equal(o Shape) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of s that shares no memory with it.
func (s Shape) Clone() Shape { return append(Shape(nil), s...) }

// String formats the shape as "64x1x28x28 (50176)".
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%s (%d)", strings.Join(parts, "x"), s.Count())
}

// Blob is a named float32 array with its gradient, as in Caffe: Data holds
// values, Diff holds d(loss)/d(Data). Both are contiguous, row-major, and
// len(Data) == len(Diff) == Shape.Count() once shaped.
//
// A Blob may be a view: its Data and Diff may alias a larger buffer (the
// model keeps every parameter of a net in one flat buffer). Reshape
// reallocates only when the new count exceeds the capacity, so views stay
// views as long as their size does not change.
type Blob struct {
	Name  string
	Shape Shape
	Data  []float32
	Diff  []float32
}

// NewBlob allocates a zeroed blob of the given shape.
func NewBlob(name string, shape ...int) *Blob {
	b := &Blob{Name: name}
	b.Reshape(shape...)
	return b
}

// Reshape sets the blob's shape, reusing its storage when it is large enough
// and allocating zeroed storage otherwise.
func (b *Blob) Reshape(shape ...int) {
	for _, d := range shape {
		if d < 0 {
			panic(fmt.Sprintf("tensor: negative dimension in shape %v", shape))
		}
	}
	checkSize(b.Name, shape)
	b.Shape = Shape(shape).Clone()
	n := b.Shape.Count()
	if cap(b.Data) >= n {
		b.Data = b.Data[:n]
	} else {
		b.Data = make([]float32, n)
	}
	if cap(b.Diff) >= n {
		b.Diff = b.Diff[:n]
	} else {
		b.Diff = make([]float32, n)
	}
}

// ReshapeLike gives b the shape of o.
func (b *Blob) ReshapeLike(o *Blob) { b.Reshape(o.Shape...) }

// Count is the number of elements in the blob.
func (b *Blob) Count() int { return b.Shape.Count() }

// Num is the outermost dimension (the batch size for NCHW blobs), 1 for a
// scalar.
func (b *Blob) Num() int {
	if len(b.Shape) == 0 {
		return 1
	}
	return b.Shape[0]
}

// Dim returns dimension i, counting negative i from the end, or 1 when the
// blob has fewer axes (Caffe's legacy accessors treat missing axes as 1).
func (b *Blob) Dim(i int) int {
	if i < 0 {
		i += len(b.Shape)
	}
	if i < 0 || i >= len(b.Shape) {
		return 1
	}
	return b.Shape[i]
}

// ZeroDiff clears the gradient.
func (b *Blob) ZeroDiff() { clear(b.Diff) }
