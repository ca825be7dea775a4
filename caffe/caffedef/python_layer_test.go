package caffedef_test

import (
	"path/filepath"
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/caffe/caffemodel"
	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/pylayer/pytest"
	"dsgd/engine/tensor"
)

// needPython readies Python for a test of Python layers, or skips it
// (pytest.Need).
func needPython(t *testing.T) { pytest.Need(t, filepath.Join("testdata", "python")) }

// pyNet builds phase p of the net src, its Input layers as the net's
// inputs.
func pyNet(t *testing.T, src string, p layers.Phase, share *model.Net) (*model.Net, *caffedef.PhaseNet, error) {
	t.Helper()
	def, err := caffedef.ParseNet("pythonnet.prototxt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pn, err := def.Phase(p)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]tensor.Shape{}
	for _, dl := range pn.Data {
		for i, top := range dl.Tops {
			inputs[top] = tensor.Shape(dl.Shapes[i])
		}
	}
	n, err := model.Build(pn.Spec, inputs, model.Options{Phase: p, Seed: 1, ShareWith: share})
	return n, pn, err
}

// The nets of pycaffe's test_python_layer.py.
const (
	pythonNet = `name: 'pythonnet' force_backward: true
        input: 'data' input_shape { dim: 10 dim: 9 dim: 8 }
        layer { type: 'Python' name: 'one' bottom: 'data' top: 'one'
          python_param { module: 'test_python_layer' layer: 'SimpleLayer' } }
        layer { type: 'Python' name: 'two' bottom: 'one' top: 'two'
          python_param { module: 'test_python_layer' layer: 'SimpleLayer' } }
        layer { type: 'Python' name: 'three' bottom: 'two' top: 'three'
          python_param { module: 'test_python_layer' layer: 'SimpleLayer' } }`
	exceptionNet = `name: 'pythonnet' force_backward: true
        input: 'data' input_shape { dim: 10 dim: 9 dim: 8 }
        layer { type: 'Python' name: 'layer' bottom: 'data' top: 'top'
          python_param { module: 'test_python_layer' layer: 'ExceptionLayer' } }`
	parameterNet = `name: 'pythonnet' force_backward: true
        input: 'data' input_shape { dim: 10 dim: 9 dim: 8 }
        layer { type: 'Python' name: 'layer' bottom: 'data' top: 'top'
          python_param { module: 'test_python_layer' layer: 'ParameterLayer' } }`
	phaseNet = `name: 'pythonnet' force_backward: true
        layer { type: 'Python' name: 'layer' top: 'phase'
          python_param { module: 'test_python_layer' layer: 'PhaseLayer' } }`
	paramStrNet = `name: 'pythonnet' force_backward: true
        input: 'data' input_shape { dim: 10 dim: 9 dim: 8 }
        layer { type: 'Python' name: 'mul10' bottom: 'data' top: 'mul10'
          python_param { module: 'test_python_layer_with_param_str'
                layer: 'SimpleParamLayer' param_str: '10' } }
        layer { type: 'Python' name: 'mul2' bottom: 'mul10' top: 'mul2'
          python_param { module: 'test_python_layer_with_param_str'
                layer: 'SimpleParamLayer' param_str: '2' } }`
)

// TestPythonLayer is pycaffe's test_python_layer.py TestPythonLayer
// (forward, backward, reshape, exception, parameter, phase), and
// TestLayerWithParam its test_python_layer_with_param_str.py (forward,
// backward through two layers multiplying by their param_str).
func TestPythonLayer(t *testing.T) {
	needPython(t)
	for _, c := range []struct {
		name, net, in, out string
		factor             float32
	}{
		{"TestPythonLayer", pythonNet, "data", "three", 1000},
		{"TestLayerWithParam", paramStrNet, "data", "mul2", 20},
	} {
		t.Run(c.name+"/forward", func(t *testing.T) {
			n, _, err := pyNet(t, c.net, layers.Train, nil)
			if err != nil {
				t.Fatal(err)
			}
			const x = 8
			fill(n.Input(c.in).Data, x)
			n.Forward()
			if err := n.Err(); err != nil {
				t.Fatal(err)
			}
			allEqual(t, "top data", n.Blob(c.out).Data, c.factor*x, 10*9*8)
		})
		t.Run(c.name+"/backward", func(t *testing.T) {
			// pycaffe sets the last top's diff to 7 and runs backward;
			// dsgd's Backward starts from each top's loss weight, so the
			// last top is given loss_weight 7.
			const x = 7
			net := strings.Replace(c.net, "top: '"+c.out+"'", "top: '"+c.out+"' loss_weight: 7", 1)
			n, _, err := pyNet(t, net, layers.Train, nil)
			if err != nil {
				t.Fatal(err)
			}
			n.Forward()
			n.Backward()
			if err := n.Err(); err != nil {
				t.Fatal(err)
			}
			allEqual(t, "input diff", n.Input(c.in).Diff, c.factor*x, 10*9*8)
		})
	}
	t.Run("TestPythonLayer/reshape", func(t *testing.T) {
		// pycaffe reshapes the input blob to 4x4x4x4; dsgd builds the net
		// at that input shape, and every top follows it through reshape.
		const s = 4
		net := strings.Replace(pythonNet, "dim: 10 dim: 9 dim: 8", "dim: 4 dim: 4 dim: 4 dim: 4", 1)
		n, _, err := pyNet(t, net, layers.Train, nil)
		if err != nil {
			t.Fatal(err)
		}
		n.Forward()
		if err := n.Err(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"data", "one", "two", "three"} {
			if got := n.Blob(name).Shape; !equalInts(got, []int{s, s, s, s}) {
				t.Errorf("%s: shape %v, want [4 4 4 4]", name, got)
			}
		}
	})
	t.Run("TestPythonLayer/exception", func(t *testing.T) {
		_, _, err := pyNet(t, exceptionNet, layers.Test, nil)
		t.Log(err)
		for _, want := range []string{`layer "layer"`, "pythonnet.prototxt:3", "test_python_layer.ExceptionLayer.setup",
			"RuntimeError: raised by ExceptionLayer.setup", "test_python_layer.py:"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v; want it to name %q", err, want)
			}
		}
	})
	t.Run("TestPythonLayer/parameter", func(t *testing.T) {
		n, pn, err := pyNet(t, parameterNet, layers.Train, nil)
		if err != nil {
			t.Fatal(err)
		}
		n.Forward()
		n.Backward()
		if err := n.Err(); err != nil {
			t.Fatal(err)
		}
		if w, g := n.Params(), n.Grads(); len(w) != 1 || w[0] != 0 || g[0] != 1 {
			t.Fatalf("params %v, grads %v; want [0] and [1]", w, g)
		}
		n.Params()[0] += n.Grads()[0]
		// Saved to and read from a .caffemodel, as the layer's one blob.
		nls, err := caffemodel.Resolve(caffemodel.SpecLayers(pn.Spec), n.Blocks())
		if err != nil {
			t.Fatal(err)
		}
		b, err := caffemodel.Encode(caffemodel.FromNet("pythonnet", "TRAIN", nls, n.Params()))
		if err != nil {
			t.Fatal(err)
		}
		n.Params()[0] = -1
		saved, err := caffemodel.Decode("saved.caffemodel", b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := caffemodel.CopyTrained(saved, "saved.caffemodel", n.Blocks(), n.Params()); err != nil {
			t.Fatal(err)
		}
		if n.Params()[0] != 1 {
			t.Fatalf("after copy_from: %v, want [1]", n.Params())
		}
		// The blob reaches Python: forward and backward see the net's value.
		n2, _, err := pyNet(t, parameterNet, layers.Train, n)
		if err != nil {
			t.Fatal(err)
		}
		n2.Forward()
		n2.Backward()
		if err := n2.Err(); err != nil {
			t.Fatal(err)
		}
		if n2.Params()[0] != 1 {
			t.Fatalf("shared net's param %v, want [1]", n2.Params())
		}
	})
	t.Run("TestPythonLayer/phase", func(t *testing.T) {
		for _, p := range []layers.Phase{layers.Train, layers.Test} {
			n, _, err := pyNet(t, phaseNet, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			n.Forward()
			if err := n.Err(); err != nil {
				t.Fatal(err)
			}
			if got := n.Blob("phase"); len(got.Shape) != 0 || got.Data[0] != float32(p) {
				t.Errorf("%v: phase top %v of shape %v, want %d", p, got.Data, got.Shape, p)
			}
		}
	})
}

func fill(d []float32, v float32) {
	for i := range d {
		d[i] = v
	}
}

func allEqual(t *testing.T, what string, d []float32, want float32, n int) {
	t.Helper()
	if len(d) != n {
		t.Fatalf("%s: %d elements, want %d", what, len(d), n)
	}
	for i, v := range d {
		if v != want {
			t.Fatalf("%s[%d] = %g, want %g", what, i, v, want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
