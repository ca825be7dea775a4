package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// FilterConfig configures Caffe's Filter layer (no fields).
type FilterConfig struct{}

// Type returns "Filter".
func (*FilterConfig) Type() string { return "Filter" }

// Build returns a Filter layer: its last bottom is a selector of N items
// (shape (N) or (N, 1, ...)), and each other bottom i, of N items, gives
// top i holding, in order, the items whose selector is non-zero. The tops'
// first axis thus changes with the selector's values: the first Reshape
// gives them all N items (Caffe's first reshape, which sizes the net),
// later Reshapes and every Forward the selected count. Backward copies
// each top item's gradient to the item it came from and zeroes the
// gradient of the items not selected; the selector takes none.
func (*FilterConfig) Build(Context) (Layer, error) { return &filterLayer{}, nil }

type filterLayer struct {
	shaped   bool  // the first Reshape has run
	selected []int // the items forwarded, in order
	changed  bool  // the last Forward changed the tops' first axis
	sel      int   // the selector's bottom index
}

func (*filterLayer) Type() string    { return "Filter" }
func (*filterLayer) Params() []Param { return nil }

// AllowBackward implements GradientBlocker: the selector, the last
// bottom, takes no gradient.
func (l *filterLayer) AllowBackward(i int) bool { return i != l.sel }

func (l *filterLayer) Setup(bottom, top []*tensor.Blob) error {
	if len(bottom) < 2 {
		return fmt.Errorf("layers: Filter takes at least 2 bottom blobs (the data and the selector), got %d", len(bottom))
	}
	if len(top) != len(bottom)-1 {
		return fmt.Errorf("layers: Filter takes one top per bottom but the selector: %d bottoms need %d tops, got %d", len(bottom), len(bottom)-1, len(top))
	}
	l.sel = len(bottom) - 1
	return l.check(bottom)
}

// check validates the bottoms' shapes: a selector with singleton axes
// after the first, and data bottoms with as many items as it.
func (l *filterLayer) check(bottom []*tensor.Blob) error {
	sel := bottom[len(bottom)-1]
	if len(sel.Shape) == 0 {
		return fmt.Errorf("layers: Filter: the selector %q must have at least one axis", sel.Name)
	}
	for i, d := range sel.Shape[1:] {
		if d != 1 {
			return fmt.Errorf("layers: Filter: the selector %q must have singleton axes after the first; axis %d is %d", sel.Name, i+1, d)
		}
	}
	for _, b := range bottom[:len(bottom)-1] {
		if len(b.Shape) == 0 || b.Shape[0] != sel.Shape[0] {
			return fmt.Errorf("layers: Filter: bottom %q of shape %v must have the selector's %d items on its first axis", b.Name, b.Shape, sel.Shape[0])
		}
	}
	return nil
}

// selectItems records the items whose selector is non-zero.
func (l *filterLayer) selectItems(sel *tensor.Blob) {
	l.selected = l.selected[:0]
	for i, v := range sel.Data[:sel.Shape[0]] {
		if v != 0 {
			l.selected = append(l.selected, i)
		}
	}
}

func (l *filterLayer) Reshape(bottom, top []*tensor.Blob) error {
	if err := l.check(bottom); err != nil {
		return err
	}
	sel := bottom[len(bottom)-1]
	if cap(l.selected) < sel.Shape[0] {
		l.selected = make([]int, 0, sel.Shape[0])
	}
	n := sel.Shape[0]
	if l.shaped {
		l.selectItems(sel)
		n = len(l.selected)
	}
	l.shaped = true
	for i, t := range top {
		shape := append([]int{n}, bottom[i].Shape[1:]...)
		t.Reshape(shape...)
	}
	return nil
}

// TopsReshaped implements ForwardReshaper.
func (l *filterLayer) TopsReshaped() bool { return l.changed }

func (l *filterLayer) Forward(bottom, top []*tensor.Blob) {
	l.selectItems(bottom[len(bottom)-1])
	n := len(l.selected)
	l.changed = false
	for i, t := range top {
		b := bottom[i]
		if len(t.Shape) != len(b.Shape) || t.Shape[0] != n {
			l.changed = true
			resizeFirst(t, b, n)
		}
		dim := b.Shape.CountFrom(1)
		for k, j := range l.selected {
			copy(t.Data[k*dim:(k+1)*dim], b.Data[j*dim:(j+1)*dim])
		}
	}
}

// resizeFirst gives t the shape of b with n items, reusing t's storage when
// it is large enough and its shape slice when it has b's rank.
func resizeFirst(t, b *tensor.Blob, n int) {
	if len(t.Shape) != len(b.Shape) {
		t.Reshape(append([]int{n}, b.Shape[1:]...)...)
		return
	}
	t.Shape[0] = n
	c := t.Shape.Count()
	if cap(t.Data) < c || cap(t.Diff) < c {
		t.Reshape(t.Shape...)
		return
	}
	t.Data, t.Diff = t.Data[:c], t.Diff[:c]
}

func (l *filterLayer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	for i, t := range top {
		if !propagateDown[i] {
			continue
		}
		b := bottom[i]
		dim := b.Shape.CountFrom(1)
		dx := b.Diff[:b.Count()]
		clear(dx)
		for k, j := range l.selected {
			copy(dx[j*dim:(j+1)*dim], t.Diff[k*dim:(k+1)*dim])
		}
	}
}
