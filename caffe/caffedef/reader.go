package caffedef

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"dsgd/caffe/prototxt"
)

// decoder carries what every reader of one file shares: the first error,
// which stops further decoding, and the warnings about ignored fields.
type decoder struct {
	err      error
	warnings []warning
}

// warning is one ignored field, kept with its position so that the
// warnings can be reported in file order.
type warning struct {
	pos prototxt.Pos
	msg string
}

// sortedWarnings returns the warnings in file order.
func (d *decoder) sortedWarnings() []string {
	slices.SortStableFunc(d.warnings, func(a, b warning) int {
		if a.pos.Line != b.pos.Line {
			return a.pos.Line - b.pos.Line
		}
		return a.pos.Col - b.pos.Col
	})
	var out []string
	for _, w := range d.warnings {
		out = append(out, w.msg)
	}
	return out
}

// failf records an error at pos unless one is already recorded.
func (d *decoder) failf(pos prototxt.Pos, format string, args ...any) {
	if d.err == nil {
		d.err = &prototxt.Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
}

// reader decodes one message against the schema its caller spells out:
// every getter consumes the fields it reads, and finish reports the first
// field nobody consumed. So a field dsgd does not know is always an error,
// never silently dropped.
type reader struct {
	d    *decoder
	m    *prototxt.Message
	ctx  string // what the message is, for errors: "convolution_param of layer \"conv1\""
	used []bool
}

func (d *decoder) reader(m *prototxt.Message, ctx string) *reader {
	return &reader{d: d, m: m, ctx: ctx, used: make([]bool, len(m.Fields))}
}

// ok reports whether no error has been recorded yet.
func (r *reader) ok() bool { return r.d.err == nil }

// valueErr records a bad value for field f.
func (r *reader) valueErr(f *prototxt.Field, format string, args ...any) {
	r.d.failf(f.ValuePos, "%s in %s: %s", f.Name, r.ctx, fmt.Sprintf(format, args...))
}

// all consumes and returns every field called name.
func (r *reader) all(name string) []*prototxt.Field {
	var out []*prototxt.Field
	for i, f := range r.m.Fields {
		if f.Name == name {
			r.used[i] = true
			out = append(out, f)
		}
	}
	return out
}

// has reports whether a field called name is present, without consuming it.
func (r *reader) has(name string) bool {
	return slices.ContainsFunc(r.m.Fields, func(f *prototxt.Field) bool { return f.Name == name })
}

// one consumes a non-repeated field: nil when absent, an error when given
// twice.
func (r *reader) one(name string) *prototxt.Field {
	fs := r.all(name)
	if len(fs) > 1 {
		r.d.failf(fs[1].Pos, "%s in %s is given more than once (first at %s)", name, r.ctx, fs[0].Pos)
		return nil
	}
	if len(fs) == 0 {
		return nil
	}
	return fs[0]
}

// scalarKind rejects a message where a scalar is expected.
func (r *reader) scalarKind(f *prototxt.Field) bool {
	if f.Kind == prototxt.KindMessage {
		r.d.failf(f.ValuePos, "%s in %s takes a value, not a message", f.Name, r.ctx)
		return false
	}
	return true
}

// msg consumes an optional sub-message; nil when absent.
func (r *reader) msg(name string) *prototxt.Message {
	f := r.one(name)
	if f == nil || !r.ok() {
		return nil
	}
	if f.Kind != prototxt.KindMessage {
		r.d.failf(f.ValuePos, "%s in %s is a message: write %s { ... }", name, r.ctx, name)
		return nil
	}
	return f.Msg
}

// msgs consumes a repeated sub-message.
func (r *reader) msgs(name string) []*prototxt.Message {
	var out []*prototxt.Message
	for _, f := range r.all(name) {
		if f.Kind != prototxt.KindMessage {
			r.d.failf(f.ValuePos, "%s in %s is a message: write %s { ... }", name, r.ctx, name)
			return nil
		}
		out = append(out, f.Msg)
	}
	return out
}

// intValue decodes f as an integer in [lo, hi].
func (r *reader) intValue(f *prototxt.Field, lo, hi int64) int64 {
	if !r.ok() || !r.scalarKind(f) {
		return 0
	}
	v, err := f.Int()
	if err != nil {
		r.valueErr(f, "%v", err)
		return 0
	}
	if v < lo || v > hi {
		r.valueErr(f, "%s", rangeMsg(v, lo, hi))
		return 0
	}
	return v
}

func rangeMsg(v, lo, hi int64) string {
	switch {
	case hi == math.MaxInt32 || hi == math.MaxInt64:
		return fmt.Sprintf("must be at least %d, got %d", lo, v)
	case lo == math.MinInt32 || lo == math.MinInt64:
		return fmt.Sprintf("must be at most %d, got %d", hi, v)
	}
	return fmt.Sprintf("must be in [%d, %d], got %d", lo, hi, v)
}

// int consumes an optional integer in [lo, hi]; def when absent.
func (r *reader) int(name string, def, lo, hi int) int {
	f := r.one(name)
	if f == nil {
		return def
	}
	return int(r.intValue(f, int64(lo), int64(hi)))
}

// ints consumes a repeated integer field, each value in [lo, hi].
func (r *reader) ints(name string, lo, hi int) []int {
	var out []int
	for _, f := range r.all(name) {
		out = append(out, int(r.intValue(f, int64(lo), int64(hi))))
	}
	return out
}

// floatValue decodes f as a number; as32 also requires it to fit a float32.
func (r *reader) floatValue(f *prototxt.Field, as32 bool) float64 {
	if !r.ok() || !r.scalarKind(f) {
		return 0
	}
	v, err := f.Float()
	if err != nil {
		r.valueErr(f, "%v", err)
		return 0
	}
	if as32 && math.Abs(v) > math.MaxFloat32 {
		r.valueErr(f, "%s is out of the float32 range", f.Value)
		return 0
	}
	return v
}

// float32 consumes an optional float; def when absent.
func (r *reader) float32(name string, def float32) float32 {
	f := r.one(name)
	if f == nil {
		return def
	}
	return float32(r.floatValue(f, true))
}

// float64 consumes an optional float (a double or a float in Caffe's
// proto; dsgd keeps solver settings in float64); def when absent.
func (r *reader) float64(name string, def float64) float64 {
	f := r.one(name)
	if f == nil {
		return def
	}
	return r.floatValue(f, true)
}

// float32s consumes a repeated float field.
func (r *reader) float32s(name string) []float32 {
	var out []float32
	for _, f := range r.all(name) {
		out = append(out, float32(r.floatValue(f, true)))
	}
	return out
}

// boolValue decodes f as a bool.
func (r *reader) boolValue(f *prototxt.Field) bool {
	if !r.ok() || !r.scalarKind(f) {
		return false
	}
	v, err := f.Bool()
	if err != nil {
		r.valueErr(f, "%v", err)
	}
	return v
}

// bool consumes an optional bool; def when absent.
func (r *reader) bool(name string, def bool) bool {
	f := r.one(name)
	if f == nil {
		return def
	}
	return r.boolValue(f)
}

// bools consumes a repeated bool field.
func (r *reader) bools(name string) []bool {
	var out []bool
	for _, f := range r.all(name) {
		out = append(out, r.boolValue(f))
	}
	return out
}

// strValue decodes f as a string.
func (r *reader) strValue(f *prototxt.Field) string {
	if !r.ok() || !r.scalarKind(f) {
		return ""
	}
	if f.Kind != prototxt.KindString {
		r.valueErr(f, "expected a quoted string, found %s", describe(f))
		return ""
	}
	return f.Value
}

// str consumes an optional string; def when absent.
func (r *reader) str(name, def string) string {
	f := r.one(name)
	if f == nil {
		return def
	}
	return r.strValue(f)
}

// strs consumes a repeated string field.
func (r *reader) strs(name string) []string {
	var out []string
	for _, f := range r.all(name) {
		out = append(out, r.strValue(f))
	}
	return out
}

// enum consumes an optional enum field whose value must be one of
// allowed; it returns the index into allowed, or def when absent.
func (r *reader) enum(name string, def int, allowed ...string) int {
	f := r.one(name)
	if f == nil {
		return def
	}
	if i := r.enumValue(f, allowed...); i >= 0 {
		return i
	}
	return def
}

// enumValue decodes f as one of allowed and returns its index; -1 after an
// error.
func (r *reader) enumValue(f *prototxt.Field, allowed ...string) int {
	if !r.ok() || !r.scalarKind(f) {
		return -1
	}
	if f.Kind != prototxt.KindIdent {
		r.valueErr(f, "expected one of %s, found %s", strings.Join(allowed, ", "), describe(f))
		return -1
	}
	i := slices.Index(allowed, f.Value)
	if i < 0 {
		r.valueErr(f, "unknown value %s; expected one of %s", f.Value, strings.Join(allowed, ", "))
	}
	return i
}

// ignore consumes a harmless field that dsgd does not use, with a warning
// saying why. With allowed values, the field is an enum whose value must
// still be one of them.
func (r *reader) ignore(name, why string, allowed ...string) {
	for _, f := range r.all(name) {
		if len(allowed) > 0 && r.enumValue(f, allowed...) < 0 {
			return
		}
		r.d.warnings = append(r.d.warnings, warning{f.Pos, fmt.Sprintf("%s: ignoring %s in %s: %s", f.Pos, name, r.ctx, why)})
	}
}

// unsupported rejects a field Caffe knows but dsgd does not implement,
// with a hint.
func (r *reader) unsupported(name, why string) {
	for _, f := range r.all(name) {
		r.d.failf(f.Pos, "unsupported field '%s' in %s: %s", name, r.ctx, why)
	}
}

// finish reports the first field nobody consumed.
func (r *reader) finish() {
	for i, f := range r.m.Fields {
		if !r.used[i] && forkFieldNote(f.Name) != "" {
			r.d.failf(f.Pos, "unsupported field '%s' in %s: %s", f.Name, r.ctx, forkFieldNote(f.Name))
			return
		}
		if !r.used[i] {
			r.d.failf(f.Pos, "unsupported field '%s' in %s: not a field dsgd knows there (check its spelling and place against Caffe's caffe.proto), so it cannot be honoured; remove it", f.Name, r.ctx)
			return
		}
	}
}

// caffeLayerParams lists the *_param messages of Caffe's LayerParameter
// (BVLC caffe.proto): Caffe parses each on any layer, and a layer of
// another type ignores it.
var caffeLayerParams = []string{
	"transform_param", "loss_param", "accuracy_param", "argmax_param", "batch_norm_param",
	"bias_param", "clip_param", "concat_param", "contrastive_loss_param", "convolution_param",
	"crop_param", "data_param", "dropout_param", "dummy_data_param", "eltwise_param",
	"elu_param", "embed_param", "exp_param", "flatten_param", "hdf5_data_param",
	"hdf5_output_param", "hinge_loss_param", "image_data_param", "infogain_loss_param",
	"inner_product_param", "input_param", "log_param", "lrn_param", "memory_data_param",
	"mvn_param", "parameter_param", "pooling_param", "power_param", "prelu_param",
	"python_param", "recurrent_param", "reduction_param", "relu_param", "reshape_param",
	"scale_param", "sigmoid_param", "softmax_param", "spp_param", "slice_param",
	"swish_param", "tanh_param", "threshold_param", "tile_param", "window_data_param",
}

// finishLayer is finish for a LayerParameter of type typ: a *_param
// message that this type does not read (Caffe parses it and the layer
// ignores it) is a warning naming its line, not an error.
func (r *reader) finishLayer(typ string) {
	for i, f := range r.m.Fields {
		if !r.used[i] && slices.Contains(caffeLayerParams, f.Name) && f.Kind == prototxt.KindMessage {
			r.used[i] = true
			r.d.warnings = append(r.d.warnings, warning{f.Pos, fmt.Sprintf("%s: ignoring %s in %s: a %s layer does not read it (Caffe accepts it and ignores it too)", f.Pos, f.Name, r.ctx, typ)})
		}
	}
	r.finish()
}

// skip consumes every field of the message: they are left unread on
// purpose (a layer dsgd cannot build, whose refusal waits until a net
// includes it).
func (r *reader) skip() {
	for i := range r.used {
		r.used[i] = true
	}
}

// describe names a scalar field's value for error messages.
func describe(f *prototxt.Field) string {
	if f.Kind == prototxt.KindString {
		return fmt.Sprintf("string %q", f.Value)
	}
	return fmt.Sprintf("%s %s", f.Kind, f.Value)
}
