package train

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// A Reshaper is a Source whose batches may each have their own shape:
// Caffe's Data layer at batch size 1 over a database of records of
// differing shapes reshapes its top, and so the net, to every record.
type Reshaper interface {
	Source
	// Reshapes reports whether the batches may differ in shape.
	Reshapes() bool
	// NextShapes sets the shape of each of the tops the next Fill
	// writes whose shape may vary, without taking that batch; shapes
	// holds one entry per top, and the others are left as they are (nil:
	// the top keeps its shape). It may reuse an entry's memory.
	NextShapes(ctx context.Context, shapes []tensor.Shape) error
}

// Reshapes reports whether the loader's batches may differ in shape
// (data.Loader.Variable).
func (s Loader) Reshapes() bool { return s.L.Variable() }

// NextShapes gives the data top's shape of the next batch; the label top
// keeps its shape.
func (s Loader) NextShapes(ctx context.Context, shapes []tensor.Shape) error {
	sh, err := s.L.Peek(ctx)
	if err != nil {
		return fmt.Errorf("data layer %q: %w", s.Name, err)
	}
	if len(shapes) > 0 {
		shapes[0] = append(shapes[0][:0], sh[0], sh[1], sh[2], sh[3])
	}
	return nil
}

// Reshapes is the wrapped Source's, when it is a Reshaper.
func (s labelChecked) Reshapes() bool {
	r, ok := s.Source.(Reshaper)
	return ok && r.Reshapes()
}

// NextShapes is the wrapped Source's.
func (s labelChecked) NextShapes(ctx context.Context, shapes []tensor.Shape) error {
	return s.Source.(Reshaper).NextShapes(ctx, shapes)
}

// Reshaping reports whether any of feeds makes batches of differing
// shapes (a Reshaper that Reshapes).
func Reshaping(feeds []Feed) bool {
	for _, f := range feeds {
		if r, ok := f.Source.(Reshaper); ok && r.Reshapes() {
			return true
		}
	}
	return false
}

// MaxShapedNets bounds the nets a NetShapes keeps besides its main one,
// and MaxShapedBytes their blobs' memory, in main nets' worth;
// past either the least recently used are dropped (and built again when
// their shape returns), all but the one in use. Caffe reshapes one net
// in place; a net per shape trades that memory for not re-planning the
// layers at every record.
const (
	MaxShapedNets  = 8
	MaxShapedBytes = 4
)

// NetShapes gives, batch by batch, the net of the batch's input shapes
// for feeds whose batches vary (Reshaping): the main net when they are
// its own, else a net built for them from the same spec, sharing the
// main net's weights and gradients (model.Options.ShareWith), so the
// solver steps the main net whichever net computed, as Caffe's net
// reshaped to each record keeps its weights. Nets are cached by shape.
type NetShapes struct {
	main  *model.Net
	spec  model.Spec
	base  map[string]tensor.Shape
	opt   model.Options
	feeds []Feed
	vary  []int // the feeds that Reshape
	// what names the net for errors ("TRAIN", "TEST").
	what string
	// nets holds the built nets by key, used in recency order (last:
	// the most recent).
	nets map[string]*model.Net
	used []string
	// bytes is the memory the nets' blobs hold (activations).
	bytes float64
	// next holds each varying feed's next shapes, one per top.
	next  [][]tensor.Shape
	built int
}

// NewNetShapes returns the NetShapes of main (built from spec with
// shapes and opt, less ShareWith) for feeds, or nil when no feed
// reshapes. what names the net in errors.
func NewNetShapes(main *model.Net, spec model.Spec, shapes map[string]tensor.Shape, opt model.Options, feeds []Feed, what string) *NetShapes {
	s := &NetShapes{main: main, spec: spec, base: shapes, opt: opt, feeds: feeds, what: what, nets: map[string]*model.Net{}}
	for i, f := range feeds {
		if r, ok := f.Source.(Reshaper); ok && r.Reshapes() {
			s.vary = append(s.vary, i)
		}
	}
	if len(s.vary) == 0 {
		return nil
	}
	// The nets never run beside one another: one pool, the main net's.
	s.opt.ShareWith, s.opt.OwnGrads, s.opt.Pool = main, false, main.Pool()
	s.opt.Threads = main.Pool().Threads()
	for _, i := range s.vary {
		s.next = append(s.next, make([]tensor.Shape, len(feeds[i].Tops)))
	}
	return s
}

// Built returns how many nets other than the main one were built.
func (s *NetShapes) Built() int { return s.built }

// Pick returns the net for the feeds' next batches, building it the
// first time its shapes come. Its grad and layer hooks are the main
// net's.
func (s *NetShapes) Pick(ctx context.Context) (*model.Net, error) {
	same := true
	for n, i := range s.vary {
		f := s.feeds[i]
		if err := f.Source.(Reshaper).NextShapes(ctx, s.next[n]); err != nil {
			return nil, err
		}
		for j, sh := range s.next[n] {
			if in := s.main.Input(f.Tops[j]); sh != nil && (in == nil || !slices.Equal(in.Shape, sh)) {
				same = false
			}
		}
	}
	if same {
		return s.main, nil
	}
	shapes := map[string]tensor.Shape{}
	var key strings.Builder
	for n, i := range s.vary {
		for j, sh := range s.next[n] {
			if sh != nil {
				top := s.feeds[i].Tops[j]
				shapes[top] = slices.Clone(sh)
				fmt.Fprintf(&key, "%s=%v;", top, []int(sh))
			}
		}
	}
	k := key.String()
	net := s.nets[k]
	if net == nil {
		all := make(map[string]tensor.Shape, len(s.base))
		for name, sh := range s.base {
			all[name] = sh
		}
		var desc []string
		for name, sh := range shapes {
			all[name] = sh
			desc = append(desc, fmt.Sprintf("%s %s", name, shapeText(sh)))
		}
		slices.Sort(desc)
		var err error
		net, err = model.Build(s.spec, all, s.opt)
		if err != nil {
			return nil, fmt.Errorf("train: %s net for the batch's input %s (Caffe's Data layer at batch_size 1 reshapes the net to each record; the net must build for every record's shape, sharing the first one's weights): %w", s.what, strings.Join(desc, ", "), err)
		}
		s.nets[k] = net
		s.bytes += activations(net)
		s.built++
	}
	s.used = slices.DeleteFunc(s.used, func(u string) bool { return u == k })
	s.used = append(s.used, k)
	// Past the bounds the least recently used go, never the one
	// picked now.
	for len(s.used) > 1 && (len(s.nets) > MaxShapedNets || s.bytes > MaxShapedBytes*activations(s.main)) {
		old := s.nets[s.used[0]]
		s.main.DropGradUser(old)
		s.bytes -= activations(old)
		delete(s.nets, s.used[0])
		s.used = s.used[1:]
	}
	net.SetGradHook(s.main.GradHook())
	net.SetLayerHook(s.main.LayerHook())
	return net, nil
}

// activations is the memory net's blobs hold: its Bytes less its
// parameters' share (20 bytes a parameter), which a net built ShareWith
// another does not hold.
func activations(net *model.Net) float64 {
	return max(net.Bytes()-20*float64(len(net.Params())), 0)
}

// shapeText formats a shape as 1x3x32x32.
func shapeText(s tensor.Shape) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}
