//go:build !purego

package pylayer_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/pylayer"
	"dsgd/engine/pylayer/pytest"
	"dsgd/engine/tensor"
)

// needPython readies Python for a test of Python layers, or skips it
// (pytest.Need).
func needPython(t *testing.T) { pytest.Need(t, "testdata") }

func build(t *testing.T, class, paramStr string, p layers.Phase) (layers.Layer, error) {
	t.Helper()
	return (&pylayer.Config{Module: "pylayer_cases", Layer: class, ParamStr: paramStr, Name: "py"}).Build(layers.Context{Phase: p})
}

// TestErrors: each way a Python layer can fail is an error naming the
// layer (where the net reports it), the module.class and the exception,
// never a crash.
func TestErrors(t *testing.T) {
	needPython(t)
	for _, c := range []struct {
		name, module, class string
		// pass: "build" (model.Build fails), "run" (Forward+Backward
		// leave net.Err) or "ok" (neither fails)
		pass string
		want []string
		// force asks for the bottom's gradient (force_backward).
		force bool
	}{
		{"no module", "pylayer_no_such_module", "X", "build",
			[]string{`layer "py" (t.prototxt:2:1)`, "importing module 'pylayer_no_such_module'", "ModuleNotFoundError", "set PYTHONPATH to the folder of pylayer_no_such_module.py"}, false},
		{"no class", "pylayer_cases", "NoSuchClass", "build", []string{"has no layer class 'NoSuchClass'", "pylayer_cases.py"}, false},
		{"not a layer", "pylayer_cases", "NotALayer", "build", []string{"pylayer_cases.NotALayer is not a caffe.Layer"}, false},
		{"empty module", "", "X", "build", []string{"needs python_param's module and layer"}, false},
		{"caffe.io", "pylayer_cases", "UsesCaffeIO", "build",
			[]string{"pylayer_cases.UsesCaffeIO.setup", "ImportError", "'caffe.io'", "not pycaffe's submodules"}, false},
		{"caffe.Net", "pylayer_cases", "UsesNet", "build", []string{"UsesNet.setup", "AttributeError", "not pycaffe's Net"}, false},
		{"bottom reshaped", "pylayer_cases", "ReshapesBottom", "build", []string{"ReshapesBottom.setup reshaped bottom 0", "only their tops"}, false},
		{"no forward", "pylayer_cases", "NoForward", "run",
			[]string{`model: layer "py" (t.prototxt:2:1), Python, forward`, "pylayer_cases.NoForward.forward", "AttributeError", "'forward'"}, false},
		{"forward raises", "pylayer_cases", "ForwardRaises", "run",
			[]string{`layer "py"`, "forward", "pylayer_cases.ForwardRaises.forward: ValueError: bad batch 2", "pylayer_cases.py:"}, false},
		{"add_blob after setup", "pylayer_cases", "LateBlob", "run", []string{"LateBlob.forward", "add_blob after setup"}, false},
		// As in Caffe: backward is called only where the net needs it.
		{"no backward, not needed", "pylayer_cases", "NoBackward", "ok", nil, false},
		{"no backward, needed", "pylayer_cases", "NoBackward", "run",
			[]string{`layer "py" (t.prototxt:2:1), Python, backward`, "pylayer_cases.NoBackward.backward: AttributeError", "'backward'"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := model.Spec{Name: "t", Inputs: []string{"x"}, Layers: []model.LayerSpec{{
				Name: "py", Bottom: []string{"x"}, Top: []string{"y"}, LossWeight: []float32{1}, Pos: "t.prototxt:2:1",
				Config: &pylayer.Config{Module: c.module, Layer: c.class, Name: "py"}}}}
			spec.ForceBackward = c.force
			n, err := model.Build(spec, map[string]tensor.Shape{"x": {2, 3}}, model.Options{Phase: layers.Train, Seed: 1})
			if c.pass != "build" {
				if err != nil {
					t.Fatal(err)
				}
				n.Forward()
				n.Backward()
				err = n.Err()
			}
			if c.pass == "ok" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want one naming %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

// TestAttributes: a blob's shape, count, legacy num/channels/height/width,
// float32 data and diff, the layer's param_str, type and blobs, and a
// top's reshape, as pycaffe gives them; a Python assertion failing would
// fail Setup.
func TestAttributes(t *testing.T) {
	needPython(t)
	l, err := build(t, "Attributes", "p=1", layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	x, y := tensor.NewBlob("x", 2, 3, 4), &tensor.Blob{Name: "y"}
	for i := range x.Data {
		x.Data[i] = float32(i)
	}
	if err := l.Setup([]*tensor.Blob{x}, []*tensor.Blob{y}); err != nil {
		t.Fatal(err)
	}
	l.Forward([]*tensor.Blob{x}, []*tensor.Blob{y})
	want := []float32{0, 1, 2, 12, 13, 14}
	if fmt.Sprint([]int(y.Shape), y.Data) != fmt.Sprint([]int{2, 3}, want) {
		t.Fatalf("top %v %v, want [2 3] %v", y.Shape, y.Data, want)
	}
}

// TestGradient checks a Python layer's backward (bottom and parameter
// gradients) against central finite differences of its forward.
func TestGradient(t *testing.T) {
	needPython(t)
	l, err := build(t, "Square", "", layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	x, y := tensor.NewBlob("x", 4, 3), &tensor.Blob{Name: "y"}
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	bottom, top := []*tensor.Blob{x}, []*tensor.Blob{y}
	if err := l.Setup(bottom, top); err != nil {
		t.Fatal(err)
	}
	ps := l.Params()
	if len(ps) != 1 || fmt.Sprint([]int(ps[0].Blob.Shape)) != "[3]" {
		t.Fatalf("params %v; want one blob of shape [3]", ps)
	}
	// The values setup gave the blob reach the net through its filler.
	w := ps[0].Blob
	ps[0].Filler.Fill(w, nil)
	if fmt.Sprint(w.Data) != "[1 1.1 1.2]" {
		t.Fatalf("blob after fill %v, want setup's [1 1.1 1.2]", w.Data)
	}
	coef := make([]float32, 12)
	for i := range coef {
		coef[i] = float32(r.NormFloat64())
	}
	loss := func() float64 {
		l.Forward(bottom, top)
		var s float64
		for i, v := range y.Data {
			s += float64(v) * float64(coef[i])
		}
		return s
	}
	loss()
	copy(y.Diff, coef)
	clear(w.Diff)
	l.Backward(top, []bool{true}, bottom)
	gx, gw := append([]float32(nil), x.Diff...), append([]float32(nil), w.Diff...)
	const h = 1e-2
	check := func(what string, v []float32, g []float32) {
		for i := range v {
			old := v[i]
			v[i] = old + h
			lp := loss()
			v[i] = old - h
			lm := loss()
			v[i] = old
			num := (lp - lm) / (2 * h)
			if math.Abs(num-float64(g[i])) > 1e-2*math.Max(1, math.Abs(num)) {
				t.Errorf("%s[%d]: backward %g, finite difference %g", what, i, g[i], num)
			}
		}
	}
	check("bottom", x.Data, gx)
	check("blob", w.Data, gw)
}

// TestConcurrent: several goroutines call Python layers at once (each its
// own instance, as each worker's net has, and two sharing one); every
// call takes the GIL on its own locked thread. Run under -race.
func TestConcurrent(t *testing.T) {
	needPython(t)
	const workers, iters = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers+2)
	run := func(l layers.Layer, mu *sync.Mutex, own bool) {
		defer wg.Done()
		x, y := tensor.NewBlob("x", 2, 5), &tensor.Blob{Name: "y"}
		bottom, top := []*tensor.Blob{x}, []*tensor.Blob{y}
		if mu != nil {
			mu.Lock()
		}
		err := l.Setup(bottom, top)
		if mu != nil {
			mu.Unlock()
		}
		if err != nil {
			errs <- err
			return
		}
		for i := 1; i <= iters; i++ {
			l.Forward(bottom, top)
			if own && y.Data[0] != float32(i) {
				errs <- fmt.Errorf("forward %d of its own instance gave %g", i, y.Data[0])
				return
			}
			copy(y.Diff, y.Data)
			l.Backward(top, []bool{true}, bottom)
			if x.Diff[0] != y.Data[0] {
				errs <- fmt.Errorf("backward gave %g for a top diff %g", x.Diff[0], y.Data[0])
				return
			}
		}
	}
	for range workers {
		l, err := build(t, "Copy", "", layers.Train)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go run(l, nil, true)
	}
	shared, err := build(t, "Copy", "", layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	wg.Add(2)
	go run(shared, &mu, false)
	go run(shared, &mu, false)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLibPythonOverride: DSGD_LIBPYTHON names the one library tried, and a
// library that does not open is a clear error naming it (in a child
// process: Python starts once per process).
func TestLibPythonOverride(t *testing.T) {
	if os.Getenv("PYLAYER_CHILD") == "libpython" {
		err := pylayer.Available()
		fmt.Printf("child: %v\n", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLibPythonOverride$")
	cmd.Env = append(os.Environ(), "PYLAYER_CHILD=libpython", "DSGD_LIBPYTHON=/nonexistent/libpython3.99.so.1.0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, w := range []string{"child: pylayer: Python layers need CPython's shared library", "DSGD_LIBPYTHON", "/nonexistent/libpython3.99.so.1.0"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("child's output %q lacks %q", out, w)
		}
	}
}

// TestCallOrder: Python sees Caffe's calls: setup and reshape when the
// layer is set up (the model's Reshape that follows, with the same
// bottoms, calls nothing), then reshape and forward on each forward pass.
func TestCallOrder(t *testing.T) {
	needPython(t)
	spec := model.Spec{Name: "t", Inputs: []string{"x"}, Layers: []model.LayerSpec{{
		Name: "py", Bottom: []string{"x"}, Top: []string{"y"},
		Config: &pylayer.Config{Module: "pylayer_cases", Layer: "Calls", Name: "py"}}}}
	n, err := model.Build(spec, map[string]tensor.Shape{"x": {2}}, model.Options{Phase: layers.Test, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[1 2 2 3]", "[2 3 2 3]"} {
		n.Forward()
		if err := n.Err(); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(n.Blob("y").Data); got != want {
			t.Errorf("calls %s, want %s (1 setup, 2 reshape, 3 forward)", got, want)
		}
	}
}

// TestCurrentFolderOnPath: the current folder is on sys.path (pycaffe
// users run Caffe's tools beside their layers' modules), with PYTHONPATH
// unset (in a child process: Python starts once per process).
func TestCurrentFolderOnPath(t *testing.T) {
	if os.Getenv("PYLAYER_CHILD") == "cwd" {
		_, err := (&pylayer.Config{Module: "beside_me", Layer: "Here", Name: "py"}).Build(layers.Context{})
		fmt.Printf("child: %v\n", err)
		return
	}
	needPython(t)
	dir := t.TempDir()
	src := "import caffe\n\nclass Here(caffe.Layer):\n    pass\n"
	if err := os.WriteFile(filepath.Join(dir, "beside_me.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestCurrentFolderOnPath$")
	cmd.Dir = dir
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PYTHONPATH=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "PYLAYER_CHILD=cwd")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child: <nil>") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestReleased: a layer the program drops releases its Python object.
func TestReleased(t *testing.T) {
	needPython(t)
	// settle collects what earlier tests dropped, until the count holds.
	settle := func() int {
		last := -1
		for i := 0; i < 500; i++ {
			runtime.GC()
			time.Sleep(5 * time.Millisecond)
			n, err := pylayer.Live()
			if err != nil {
				t.Fatal(err)
			}
			if n == last {
				return n
			}
			last = n
		}
		return last
	}
	before := settle()
	held := make([]layers.Layer, 3)
	for i := range held {
		l, err := build(t, "Copy", "", layers.Test)
		if err != nil {
			t.Fatal(err)
		}
		held[i] = l
	}
	runtime.GC()
	if n, _ := pylayer.Live(); n != before+3 {
		t.Fatalf("%d Python layer objects live with three more held, %d before", n, before)
	}
	runtime.KeepAlive(held)
	held = nil
	if n := settle(); n != before {
		t.Fatalf("%d Python layer objects live after three were dropped, %d before", n, before)
	}
}

// TestBlobInInit: blobs a layer adds in __init__, before setup, are its
// params too, starting from the values it gave them.
func TestBlobInInit(t *testing.T) {
	needPython(t)
	spec := model.Spec{Name: "t", Inputs: []string{"x"}, Layers: []model.LayerSpec{{
		Name: "py", Bottom: []string{"x"}, Top: []string{"y"}, LossWeight: []float32{1},
		Config: &pylayer.Config{Module: "pylayer_cases", Layer: "BlobInInit", Name: "py"}}}}
	n, err := model.Build(spec, map[string]tensor.Shape{"x": {2}}, model.Options{Phase: layers.Train, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	copy(n.Input("x").Data, []float32{1, 2})
	loss := n.Forward()
	n.Backward()
	if err := n.Err(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(n.Params(), n.Grads(), loss); got != "[3 4] [3 0] 9" {
		t.Fatalf("params, grads, loss %s; want [3 4] [3 0] 9", got)
	}
}
