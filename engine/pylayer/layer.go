package pylayer

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// Config is Caffe's PythonParameter: the module to import, the class in
// it (a caffe.Layer), and the string the layer reads as self.param_str.
type Config struct {
	Module, Layer, ParamStr string
	// ShareInParallel is read for Caffe's sake and changes nothing: Caffe
	// marks it DEPRECATED and ignores it, and in dsgd every worker's net
	// has its own instance of the class (a Python data layer therefore
	// yields its batches to each worker; see docs/caffe-nets.md).
	ShareInParallel bool
	// Name is the layer's name, which the class's LayerParameter carries.
	Name string
}

// Type returns "Python".
func (*Config) Type() string { return "Python" }

// Build starts Python (once per process), imports Module and makes an
// instance of its class Layer, given a LayerParameter (name, type, phase,
// python_param) as Caffe gives it; param_str and phase are set on it.
func (c *Config) Build(ctx layers.Context) (layers.Layer, error) {
	if c.Module == "" || c.Layer == "" {
		return nil, fmt.Errorf("pylayer: a Python layer needs python_param's module and layer (got module %q, layer %q)", c.Module, c.Layer)
	}
	if err := start(); err != nil {
		return nil, err
	}
	req, _ := json.Marshal(map[string]any{"op": "new", "module": c.Module, "layer": c.Layer,
		"param_str": c.ParamStr, "share_in_parallel": c.ShareInParallel, "phase": int(ctx.Phase), "name": c.Name})
	var ans struct {
		ID int `json:"id"`
	}
	if err := ask(req, &ans); err != nil {
		return nil, fmt.Errorf("pylayer: %w", err)
	}
	l := &layer{cfg: *c, id: ans.ID, keys: map[*tensor.Blob]int{}}
	// A net that is dropped (a batch-1 net of one shape, a run of dsgd
	// compare) drops its Python objects and their arrays too.
	runtime.AddCleanup(l, release, ans.ID)
	return l, nil
}

// release forgets the Python object of layer id.
func release(id int) {
	req, _ := json.Marshal(map[string]any{"op": "del", "id": id})
	_ = ask(req, &struct{}{})
}

// live is how many Python layer objects dsgd holds.
func live() (int, error) {
	var ans struct {
		Live int `json:"live"`
	}
	err := ask([]byte(`{"op":"live"}`), &ans)
	return ans.Live, err
}

// ask sends req and decodes the answer into v; an answer with "error" is
// returned as that error.
func ask(req []byte, v any) error {
	out, err := callPy(req)
	if err != nil {
		return err
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &e); err != nil {
		return fmt.Errorf("dsgd's Python bridge answered %q: %v", truncate(string(out), 200), err)
	}
	if e.Error != "" {
		return fmt.Errorf("%s", e.Error)
	}
	return json.Unmarshal(out, v)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// layer is one instance of a Python layer class.
type layer struct {
	cfg Config
	id  int
	// mu makes one pass at a time of this instance (GIL or not, its
	// request and the copy back are two calls).
	mu sync.Mutex
	// keys names each blob the layer has been given, so that an in-place
	// layer (top == bottom) sees one Python blob.
	keys     map[*tensor.Blob]int
	params   []layers.Param
	reshaped bool
	// setupShapes are the bottoms' shapes Setup reshaped the tops for:
	// the model's Reshape right after Setup, with them unchanged, does not
	// call reshape again, so that Python sees Caffe's calls (setup,
	// reshape, then reshape and forward each pass).
	setupShapes [][]int
}

func (*layer) Type() string { return "Python" }

func (l *layer) Params() []layers.Param { return l.params }

// TopsReshaped implements layers.ForwardReshaper: a Python layer's reshape
// runs before each forward, as in Caffe, and may change its tops (a data
// layer's images of differing sizes).
func (l *layer) TopsReshaped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reshaped
}

// blobRef is a blob as the bridge sees it: its key, shape, element count
// and the addresses of its data and diff (pinned for the call).
type blobRef struct {
	K int     `json:"k"`
	S []int   `json:"s"`
	N int     `json:"n"`
	D uintptr `json:"d"`
	G uintptr `json:"g"`
}

func (l *layer) refs(bs []*tensor.Blob, pin *runtime.Pinner, param bool) []blobRef {
	out := make([]blobRef, len(bs))
	for i, b := range bs {
		k := -1 - i
		if !param {
			var ok bool
			if k, ok = l.keys[b]; !ok {
				k = len(l.keys)
				l.keys[b] = k
			}
		}
		n := b.Count()
		if len(b.Data) < n {
			b.Data = slices.Grow(b.Data[:0], n)[:n]
		}
		if len(b.Diff) < n {
			b.Diff = slices.Grow(b.Diff[:0], n)[:n]
		}
		r := blobRef{K: k, S: append([]int{}, b.Shape...), N: n}
		if n > 0 {
			pin.Pin(&b.Data[0])
			pin.Pin(&b.Diff[0])
			r.D = uintptr(unsafe.Pointer(&b.Data[0]))
			r.G = uintptr(unsafe.Pointer(&b.Diff[0]))
		}
		out[i] = r
	}
	return out
}

func (l *layer) paramBlobs() []*tensor.Blob {
	bs := make([]*tensor.Blob, len(l.params))
	for i, p := range l.params {
		bs[i] = p.Blob
	}
	return bs
}

// run calls the instance's method (setup: setup then reshape; forward:
// reshape then forward, as Caffe's Layer::Forward reshapes first) with
// the blobs copied in, gives dsgd's blobs the shapes Python left, and
// copies the blobs back.
func (l *layer) run(method string, bottom, top []*tensor.Blob, prop []bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	setupShapes := l.setupShapes
	l.setupShapes = nil
	if method == "reshape" && setupShapes != nil && slices.EqualFunc(setupShapes, shapesOf(bottom), slices.Equal) {
		return nil
	}
	where := l.cfg.Module + "." + l.cfg.Layer
	var pin runtime.Pinner
	defer pin.Unpin()
	params := l.paramBlobs()
	if prop == nil {
		prop = []bool{}
	}
	req, err := json.Marshal(map[string]any{"op": "call", "id": l.id, "method": method,
		"bottom": l.refs(bottom, &pin, false), "top": l.refs(top, &pin, false),
		"params": l.refs(params, &pin, true), "prop": prop})
	if err != nil {
		return err
	}
	var ans struct {
		Bottom, Top, Params [][]int
	}
	if err := ask(req, &ans); err != nil {
		return err
	}
	pin.Unpin()
	for i, s := range ans.Bottom {
		if !slices.Equal(s, bottom[i].Shape) && !slices.Contains(top, bottom[i]) {
			return fmt.Errorf("%s.%s reshaped bottom %d (%q) from %v to %v; dsgd's layers reshape only their tops", where, method, i, bottom[i].Name, bottom[i].Shape, s)
		}
	}
	l.reshaped = false
	for i, s := range ans.Top {
		if !slices.Equal(s, top[i].Shape) {
			top[i].Reshape(s...)
			l.reshaped = true
		}
	}
	if method == "setup" {
		l.params = make([]layers.Param, len(ans.Params))
		for i, s := range ans.Params {
			l.params[i] = layers.Param{Blob: tensor.NewBlob(fmt.Sprintf("%s.blobs[%d]", l.cfg.Name, i), s...)}
		}
		params = l.paramBlobs()
	} else if len(ans.Params) != len(l.params) {
		return fmt.Errorf("%s.%s changed the layer's blobs from %d to %d; dsgd fixes them when setup returns", where, method, len(l.params), len(ans.Params))
	}
	for i, s := range ans.Params {
		if !slices.Equal(s, params[i].Shape) {
			return fmt.Errorf("%s.%s reshaped self.blobs[%d] from %v to %v; dsgd fixes a layer's blobs when setup returns", where, method, i, params[i].Shape, s)
		}
	}
	req, err = json.Marshal(map[string]any{"op": "out", "id": l.id,
		"bottom": l.refs(bottom, &pin, false), "top": l.refs(top, &pin, false),
		"params": l.refs(params, &pin, true)})
	if err != nil {
		return err
	}
	if err := ask(req, &struct{}{}); err != nil {
		return err
	}
	if method == "setup" {
		l.setupShapes = shapesOf(bottom)
		// The values setup gave its blobs are their initial values: the
		// net fills each param with its filler after pointing it into the
		// net's weights.
		for i := range l.params {
			v := slices.Clone(l.params[i].Blob.Data)
			l.params[i].Filler = layers.Filler{Type: layers.FillPreset, Preset: &v}
		}
	}
	return nil
}

// Setup sets param_str and phase (done at Build) and calls setup, then
// reshape, as Caffe's LayerSetUp and Reshape.
func (l *layer) Setup(bottom, top []*tensor.Blob) error {
	return l.run("setup", bottom, top, nil)
}

// Reshape calls the class's reshape, which shapes the tops (but see
// setupShapes).
func (l *layer) Reshape(bottom, top []*tensor.Blob) error {
	return l.run("reshape", bottom, top, nil)
}

func shapesOf(bs []*tensor.Blob) [][]int {
	out := make([][]int, len(bs))
	for i, b := range bs {
		out[i] = slices.Clone([]int(b.Shape))
	}
	return out
}

// Forward calls reshape then forward; a Python exception panics with an
// error naming the class and the exception, which the net turns into its
// Err naming the layer.
func (l *layer) Forward(bottom, top []*tensor.Blob) {
	if err := l.run("forward", bottom, top, nil); err != nil {
		panic(passError{err})
	}
}

// Backward calls backward with propagate_down.
func (l *layer) Backward(top []*tensor.Blob, propagateDown []bool, bottom []*tensor.Blob) {
	if err := l.run("backward", bottom, top, propagateDown); err != nil {
		panic(passError{err})
	}
}

// passError is a Python layer's failure in Forward or Backward, which
// have no error to return: the net recovers it into its Err.
type passError struct{ err error }

func (e passError) Error() string { return "Python layer: " + e.err.Error() }
func (e passError) Unwrap() error { return e.err }
