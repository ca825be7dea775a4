package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

// This file tests the recurrent layers (LSTM, RNN, LSTMUnit) three ways:
// ports of Caffe's test_lstm_layer.cpp and test_rnn_layer.cpp, named as
// Caffe's tests; PyTorch's own cells in float64 on the same inputs
// (testdata/torch_recurrent.json, made by scripts/torch_recurrent.py); and
// finite differences, with static inputs, exposed state and sequences
// restarting mid-batch.

var (
	caffeWeightFiller = Filler{Type: FillGaussian, Std: 0.2}
	caffeBiasFiller   = Filler{Type: FillGaussian, Std: 0.1}
)

func recCfg(typ string, numOutput int, expose bool) Config {
	rc := RecurrentConfig{NumOutput: numOutput, WeightFiller: caffeWeightFiller, BiasFiller: caffeBiasFiller, ExposeHidden: expose}
	if typ == "RNN" {
		return &RNNConfig{rc}
	}
	return &LSTMConfig{rc}
}

// buildFilled builds and sets up a layer and fills its params with their
// own fillers from a fixed seed, as Caffe's tests do.
func buildFilled(t *testing.T, cfg Config, ctx Context, seed uint64, bottom, top []*tensor.Blob) Layer {
	t.Helper()
	l, err := cfg.Build(ctx)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if err := l.Setup(bottom, top); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	r := rand.New(rand.NewPCG(seed, 17))
	for _, p := range l.Params() {
		p.Filler.Fill(p.Blob, r)
	}
	if err := l.Reshape(bottom, top); err != nil {
		t.Fatalf("Reshape: %v", err)
	}
	return l
}

func fillUniform(b *tensor.Blob, lo, hi float64, r *rand.Rand) {
	for i := range b.Data {
		b.Data[i] = float32(lo + (hi-lo)*r.Float64())
	}
}

func newTops(n int) []*tensor.Blob {
	top := make([]*tensor.Blob, n)
	for i := range top {
		top[i] = tensor.NewBlob("top")
	}
	return top
}

// recurrentFixture holds Caffe's test fixture: x (T×N×3×2), cont (T×N),
// x_static (N×2×3×4), num_output 7.
type recurrentFixture struct {
	x, cont, static *tensor.Blob
	r               *rand.Rand
}

func newRecurrentFixture(T, N int) *recurrentFixture {
	f := &recurrentFixture{
		x:      tensor.NewBlob("x", T, N, 3, 2),
		cont:   tensor.NewBlob("cont", T, N),
		static: tensor.NewBlob("x_static", N, 2, 3, 4),
		r:      rand.New(rand.NewPCG(uint64(T), uint64(N))),
	}
	fillUniform(f.x, -1, 1, f.r)
	return f
}

// TestCaffeRecurrent ports Caffe's LSTMLayerTest and RNNLayerTest.
func TestCaffeRecurrent(t *testing.T) {
	const numOutput = 7
	for _, typ := range []string{"LSTM", "RNN"} {
		t.Run(typ+"LayerTest.TestSetUp", func(t *testing.T) {
			f := newRecurrentFixture(1, 3)
			top := newTops(1)
			buildFilled(t, recCfg(typ, numOutput, false), Context{}, 1, []*tensor.Blob{f.x, f.cont}, top)
			if want := (tensor.Shape{1, 3, numOutput}); !top[0].Shape.Equal(want) {
				t.Errorf("top shape %v, want %v", top[0].Shape, want)
			}
		})
		t.Run(typ+"LayerTest.TestForward", func(t *testing.T) { testRecurrentForward(t, typ) })
		grad := func(T, N int, cont func(i int) float32, static bool) func(t *testing.T) {
			return func(t *testing.T) {
				f := newRecurrentFixture(T, N)
				for i := range f.cont.Data {
					f.cont.Data[i] = cont(i)
				}
				bottom := []*tensor.Blob{f.x, f.cont}
				if static {
					fillUniform(f.static, 0, 1, f.r)
					bottom = append(bottom, f.static)
				}
				top := newTops(1)
				l := buildFilled(t, recCfg(typ, numOutput, false), Context{}, 1701, bottom, top)
				checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-3, Skip: map[int]bool{1: true}, Seed: 1})
			}
		}
		zero := func(int) float32 { return 0 }
		after2 := func(i int) float32 {
			if i > 2 {
				return 1
			}
			return 0
		}
		t.Run(typ+"LayerTest.TestGradient", grad(1, 3, zero, false))
		t.Run(typ+"LayerTest.TestGradientNonZeroCont", grad(1, 3, after2, false))
		t.Run(typ+"LayerTest.TestGradientNonZeroContBufferSize2", grad(2, 2, after2, false))
		t.Run(typ+"LayerTest.TestGradientNonZeroContBufferSize2WithStaticInput", grad(2, 2, after2, true))
	}

	unit := func(t *testing.T) (l Layer, bottom, top []*tensor.Blob) {
		r := rand.New(rand.NewPCG(5, 6))
		cPrev, x, cont := tensor.NewBlob("c_prev", 1, 3, numOutput), tensor.NewBlob("x", 1, 3, 4*numOutput), tensor.NewBlob("cont", 1, 3)
		fillUniform(cPrev, -1, 1, r)
		fillUniform(x, -1, 1, r)
		bottom, top = []*tensor.Blob{cPrev, x, cont}, newTops(2)
		return newTestLayer(t, &LSTMUnitConfig{}, Context{}, bottom, top), bottom, top
	}
	t.Run("LSTMLayerTest.TestLSTMUnitSetUp", func(t *testing.T) {
		_, bottom, top := unit(t)
		for i, tb := range top {
			if !tb.Shape.Equal(bottom[0].Shape) {
				t.Errorf("top %d shape %v, want %v", i, tb.Shape, bottom[0].Shape)
			}
		}
	})
	for name, cont := range map[string][]float32{"TestLSTMUnitGradient": {0, 0, 0}, "TestLSTMUnitGradientNonZeroCont": {1, 0, 1}} {
		t.Run("LSTMLayerTest."+name, func(t *testing.T) {
			l, bottom, top := unit(t)
			copy(bottom[2].Data, cont)
			checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-3, Skip: map[int]bool{2: true}, Seed: 2})
		})
	}
}

// testRecurrentForward is Caffe's TestForward: a sequence run in one batch
// equals the same sequence run one timestep per Forward, the layer carrying
// its state; with every cont 0 the timestep-wise outputs differ after the
// first.
func testRecurrentForward(t *testing.T, typ string) {
	const T, N, numOutput = 3, 3, 7
	f := newRecurrentFixture(T, N)
	for tt := 0; tt < T; tt++ {
		for n := 0; n < N; n++ {
			if tt > 0 {
				f.cont.Data[tt*N+n] = 1
			}
		}
	}
	fillGaussian(f.x, 1, rand.New(rand.NewPCG(1, 1)))
	top := newTops(1)
	full := buildFilled(t, recCfg(typ, numOutput, false), Context{}, 1701, []*tensor.Blob{f.x, f.cont}, top)
	full.Forward([]*tensor.Blob{f.x, f.cont}, top)
	want := append([]float32(nil), top[0].Data...)

	x1, cont1 := tensor.NewBlob("x", 1, N, 3, 2), tensor.NewBlob("cont", 1, N)
	bottom1 := []*tensor.Blob{x1, cont1}
	for _, resetAll := range []bool{false, true} {
		top1 := newTops(1)
		l := buildFilled(t, recCfg(typ, numOutput, false), Context{}, 1701, bottom1, top1)
		step := len(x1.Data)
		for tt := 0; tt < T; tt++ {
			copy(x1.Data, f.x.Data[tt*step:])
			for n := range cont1.Data {
				cont1.Data[n] = 0
				if tt > 0 && !resetAll {
					cont1.Data[n] = 1
				}
			}
			l.Forward(bottom1, top1)
			w := want[tt*len(top1[0].Data) : (tt+1)*len(top1[0].Data)]
			for i, v := range top1[0].Data {
				switch {
				case !resetAll || tt == 0:
					if math.Abs(float64(v-w[i])) > 1e-5 {
						t.Errorf("resetAll=%v t=%d i=%d: %g, want %g", resetAll, tt, i, v, w[i])
					}
				case v == w[i]:
					t.Errorf("cont 0 at t=%d i=%d: output %g equals the continued sequence's", tt, i, v)
				}
			}
		}
	}
}

// recurrentCases are the fixtures of torch_recurrent.json.
func recurrentCases() map[string]caffeCase {
	lstm := func(expose bool) *LSTMConfig { return &LSTMConfig{RecurrentConfig{NumOutput: 5, ExposeHidden: expose}} }
	rnn := func(expose bool) *RNNConfig { return &RNNConfig{RecurrentConfig{NumOutput: 5, ExposeHidden: expose}} }
	cont := map[int]bool{1: true}
	return map[string]caffeCase{
		"LSTM":              {cfg: lstm(false), skip: cont},
		"LSTMStaticExposed": {cfg: lstm(true), tops: 3, skip: cont},
		"RNN":               {cfg: rnn(false), skip: cont},
		"RNNStaticExposed":  {cfg: rnn(true), tops: 2, skip: cont},
	}
}

func loadRecurrentCases(t *testing.T) []torchCase {
	t.Helper()
	return loadTorchFixture(t, "testdata/torch_recurrent.json")
}

// TestTorchRecurrent compares LSTM and RNN with PyTorch's LSTMCell and
// RNNCell in float64: tops, bottom diffs (x, x_static, h0, c0) and param
// diffs, and checks the same cases with finite differences. The non-exposed
// cases also run twice: the second Forward starts from the first's final
// state, which cont 0 at t = 0 discards.
func TestTorchRecurrent(t *testing.T) {
	cases := recurrentCases()
	seen := map[string]bool{}
	for _, tc := range loadRecurrentCases(t) {
		c, ok := cases[tc.Name]
		if !ok {
			t.Errorf("fixture %s has no Go case", tc.Name)
			continue
		}
		seen[tc.Name] = true
		t.Run(tc.Name, func(t *testing.T) {
			l, bottom, top := tc.setUp(t, c)
			for pass := 0; pass < 2; pass++ {
				tc.checkForward(t, l, bottom, top)
			}
			tc.checkBackward(t, l, bottom, top, true)
		})
		t.Run(tc.Name+"/FiniteDifferences", func(t *testing.T) {
			l, bottom, top := tc.setUp(t, c)
			checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-2, Skip: c.skip, Seed: 3})
		})
	}
	for name := range cases {
		if !seen[name] {
			t.Errorf("case %s has no fixture; rerun make torch-layers", name)
		}
	}
}

// TestRecurrentGradientExposed checks the gradients with the state exposed
// (through hT/cT tops back into h0/c0 bottoms), a static input and
// sequences restarting mid-batch, on weights large enough to saturate.
func TestRecurrentGradientExposed(t *testing.T) {
	for _, typ := range []string{"LSTM", "RNN"} {
		for _, static := range []bool{false, true} {
			name := typ
			if static {
				name += "Static"
			}
			t.Run(name, func(t *testing.T) {
				const T, N, H = 3, 2, 4
				r := rand.New(rand.NewPCG(7, 8))
				x, cont := tensor.NewBlob("x", T, N, 3), tensor.NewBlob("cont", T, N)
				fillGaussian(x, 1, r)
				copy(cont.Data, []float32{1, 0, 0, 1, 1, 1})
				bottom := []*tensor.Blob{x, cont}
				if static {
					xs := tensor.NewBlob("x_static", N, 2)
					fillGaussian(xs, 1, r)
					bottom = append(bottom, xs)
				}
				nrec := 1
				if typ == "LSTM" {
					nrec = 2
				}
				for range nrec {
					s := tensor.NewBlob("state", 1, N, H)
					fillGaussian(s, 1, r)
					bottom = append(bottom, s)
				}
				top := newTops(1 + nrec)
				l := newTestLayer(t, recCfg(typ, H, true), Context{}, bottom, top)
				checkGradients(t, l, bottom, top, gradCheck{Threshold: 1e-2, Skip: map[int]bool{1: true}, Seed: 4})
			})
		}
	}
}

// TestRecurrentThreads checks that GEMMs split among a pool's threads give
// the single-threaded results, forward and backward.
func TestRecurrentThreads(t *testing.T) {
	for _, typ := range []string{"LSTM", "RNN"} {
		t.Run(typ, func(t *testing.T) {
			const T, N, D, H = 8, 32, 128, 256 // big enough to split the GEMMs and the LSTM unit
			run := func(ctx Context) (out [][]float32) {
				r := rand.New(rand.NewPCG(9, 9))
				x, cont := tensor.NewBlob("x", T, N, D), tensor.NewBlob("cont", T, N)
				fillGaussian(x, 1, r)
				for i := N; i < len(cont.Data); i++ {
					cont.Data[i] = float32(r.IntN(4) / 3)
				}
				xs := tensor.NewBlob("x_static", N, D)
				fillGaussian(xs, 1, r)
				bottom, top := []*tensor.Blob{x, cont, xs}, newTops(1)
				l := buildFilled(t, recCfg(typ, H, false), ctx, 3, bottom, top)
				l.Forward(bottom, top)
				fillGaussian(&tensor.Blob{Data: top[0].Diff}, 1, r)
				l.Backward(top, []bool{true, false, true}, bottom)
				out = append(out, top[0].Data, x.Diff, xs.Diff)
				for _, p := range l.Params() {
					out = append(out, p.Blob.Diff)
				}
				return out
			}
			pool := tensor.NewPool(4)
			defer pool.Close()
			one, four := run(Context{}), run(Context{Threads: 4, Pool: pool})
			for i := range one {
				assertClose(t, "result", four[i], one[i], 1e-4)
			}
		})
	}
}

// TestRecurrentNoAllocs checks that Forward and Backward do not allocate
// once set up.
func TestRecurrentNoAllocs(t *testing.T) {
	for _, typ := range []string{"LSTM", "RNN"} {
		r := rand.New(rand.NewPCG(1, 1))
		x, cont, xs := tensor.NewBlob("x", 4, 3, 5), tensor.NewBlob("cont", 4, 3), tensor.NewBlob("x_static", 3, 2)
		fillGaussian(x, 1, r)
		bottom, top := []*tensor.Blob{x, cont, xs}, newTops(1)
		l := buildFilled(t, recCfg(typ, 6, false), Context{}, 1, bottom, top)
		prop := []bool{true, false, true}
		if n := testing.AllocsPerRun(10, func() {
			l.Forward(bottom, top)
			l.Backward(top, prop, bottom)
		}); n != 0 {
			t.Errorf("%s: %v allocations per Forward+Backward", typ, n)
		}
	}
}

// TestRecurrentReshapeStreams checks that a change in the number of streams
// (and of timesteps) reshapes the tops and restarts from a zero state.
func TestRecurrentReshapeStreams(t *testing.T) {
	x, cont := tensor.NewBlob("x", 2, 3, 4), tensor.NewBlob("cont", 2, 3)
	fillGaussian(x, 1, rand.New(rand.NewPCG(2, 2)))
	bottom, top := []*tensor.Blob{x, cont}, newTops(1)
	l := buildFilled(t, recCfg("LSTM", 5, false), Context{}, 1, bottom, top)
	l.Forward(bottom, top)
	x.Reshape(3, 2, 4)
	cont.Reshape(3, 2)
	for i := range cont.Data {
		cont.Data[i] = 1 // continue from the (reset) carried state
	}
	if err := l.Reshape(bottom, top); err != nil {
		t.Fatal(err)
	}
	if !top[0].Shape.Equal(tensor.Shape{3, 2, 5}) {
		t.Fatalf("top shape %v", top[0].Shape)
	}
	l.Forward(bottom, top)
	got := append([]float32(nil), top[0].Data...)
	clear(cont.Data[:2]) // an explicit restart at t = 0 gives the same
	l2 := buildFilled(t, recCfg("LSTM", 5, false), Context{}, 1, bottom, newTops(1))
	top2 := newTops(1)
	if err := l2.Reshape(bottom, top2); err != nil {
		t.Fatal(err)
	}
	l2.Forward(bottom, top2)
	assertClose(t, "after reshape", got, top2[0].Data, 1e-6)
}

// TestRecurrentErrors checks that bad configs and bottoms are refused with
// a message saying what is wrong.
func TestRecurrentErrors(t *testing.T) {
	if _, err := (&LSTMConfig{}).Build(Context{}); err == nil || !strings.Contains(err.Error(), "num_output") {
		t.Errorf("LSTM without num_output: %v", err)
	}
	if _, err := (&RNNConfig{RecurrentConfig{NumOutput: 3, WeightFiller: Filler{Type: "nope"}}}).Build(Context{}); err == nil {
		t.Error("RNN with a bad filler built")
	}
	b := func(shape ...int) *tensor.Blob { return tensor.NewBlob("b", shape...) }
	for _, c := range []struct {
		name   string
		typ    string
		expose bool
		bottom []*tensor.Blob
		tops   int
		want   string
	}{
		{"one bottom", "LSTM", false, []*tensor.Blob{b(2, 3, 4)}, 1, "bottom"},
		{"too many bottoms", "LSTM", false, []*tensor.Blob{b(2, 3, 4), b(2, 3), b(3, 1), b(3, 1)}, 1, "bottom"},
		{"two tops", "RNN", false, []*tensor.Blob{b(2, 3, 4), b(2, 3)}, 2, "top"},
		{"x one axis", "LSTM", false, []*tensor.Blob{b(6), b(2, 3)}, 1, "2 axes"},
		{"cont shape", "LSTM", false, []*tensor.Blob{b(2, 3, 4), b(2, 4)}, 1, "continuation"},
		{"cont axes", "RNN", false, []*tensor.Blob{b(2, 3, 4), b(2, 3, 1)}, 1, "continuation"},
		{"static streams", "LSTM", false, []*tensor.Blob{b(2, 3, 4), b(2, 3), b(2, 5)}, 1, "static"},
		{"exposed missing c0", "LSTM", true, []*tensor.Blob{b(2, 3, 4), b(2, 3), b(1, 3, 5)}, 3, "expose_hidden"},
		{"exposed h0 shape", "RNN", true, []*tensor.Blob{b(2, 3, 4), b(2, 3), b(1, 3, 4)}, 2, "initial state"},
		{"exposed tops", "LSTM", true, []*tensor.Blob{b(2, 3, 4), b(2, 3), b(1, 3, 5), b(1, 3, 5)}, 1, "top"},
		{"no timesteps", "LSTM", false, []*tensor.Blob{b(0, 3, 4), b(0, 3)}, 1, "timesteps"},
	} {
		l, err := recCfg(c.typ, 5, c.expose).Build(Context{})
		if err != nil {
			t.Fatal(err)
		}
		err = l.Setup(c.bottom, newTops(c.tops))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.typ) {
			t.Errorf("%s: got %v, want an error naming %s and mentioning %q", c.name, err, c.typ, c.want)
		}
	}
	// Reshape refuses a changed input size.
	bottom, top := []*tensor.Blob{b(2, 3, 4), b(2, 3)}, newTops(1)
	l := buildFilled(t, recCfg("LSTM", 5, false), Context{}, 1, bottom, top)
	bottom[0].Reshape(2, 3, 5)
	if err := l.Reshape(bottom, top); err == nil || !strings.Contains(err.Error(), "set up for 4") {
		t.Errorf("changed input size: %v", err)
	}

	for _, c := range []struct {
		name   string
		bottom []*tensor.Blob
		want   string
	}{
		{"c_prev axes", []*tensor.Blob{b(3, 5), b(1, 3, 20), b(1, 3)}, "previous cell"},
		{"gates size", []*tensor.Blob{b(1, 3, 5), b(1, 3, 16), b(1, 3)}, "gate"},
		{"cont shape", []*tensor.Blob{b(1, 3, 5), b(1, 3, 20), b(3)}, "continuation"},
	} {
		l, _ := (&LSTMUnitConfig{}).Build(Context{})
		top := newTops(2)
		err := l.Setup(c.bottom, top)
		if err == nil {
			err = l.Reshape(c.bottom, top)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LSTMUnit %s: got %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

// TestRecurrentParamShapes checks the params' count, order, names and
// shapes against Caffe's unrolled nets, which a .caffemodel's blobs follow.
func TestRecurrentParamShapes(t *testing.T) {
	b := func(shape ...int) *tensor.Blob { return tensor.NewBlob("b", shape...) }
	for _, c := range []struct {
		typ    string
		static bool
		want   []string
	}{
		{"LSTM", false, []string{"W_xc[28 6]", "b_c[28]", "W_hc[28 7]"}},
		{"LSTM", true, []string{"W_xc[28 6]", "b_c[28]", "W_xc_static[28 24]", "W_hc[28 7]"}},
		{"RNN", false, []string{"W_xh[7 6]", "b_h[7]", "W_hh[7 7]", "W_ho[7 7]", "b_o[7]"}},
		{"RNN", true, []string{"W_xh[7 6]", "b_h[7]", "W_xh_static[7 24]", "W_hh[7 7]", "W_ho[7 7]", "b_o[7]"}},
	} {
		bottom := []*tensor.Blob{b(2, 3, 3, 2), b(2, 3)}
		if c.static {
			bottom = append(bottom, b(3, 2, 3, 4))
		}
		l := buildFilled(t, recCfg(c.typ, 7, false), Context{}, 1, bottom, newTops(1))
		var got []string
		for _, p := range l.Params() {
			got = append(got, fmt.Sprintf("%s%v", p.Blob.Name, []int(p.Blob.Shape)))
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s static=%v: params %v, want %v", c.typ, c.static, got, c.want)
		}
	}
}

// BenchmarkLSTM times a Forward and Backward of an LSTM of LRCN's shape
// at a quarter of its width (20 timesteps, 25 streams, 256 inputs and
// hidden units).
func BenchmarkLSTM(b *testing.B) {
	const T, N, D, H = 20, 25, 256, 256
	r := rand.New(rand.NewPCG(1, 1))
	x, cont := tensor.NewBlob("x", T, N, D), tensor.NewBlob("cont", T, N)
	fillGaussian(x, 1, r)
	for i := N; i < len(cont.Data); i++ {
		cont.Data[i] = 1
	}
	bottom, top := []*tensor.Blob{x, cont}, newTops(1)
	l, err := recCfg("LSTM", H, false).Build(Context{})
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Setup(bottom, top); err != nil {
		b.Fatal(err)
	}
	for _, p := range l.Params() {
		p.Filler.Fill(p.Blob, r)
	}
	if err := l.Reshape(bottom, top); err != nil {
		b.Fatal(err)
	}
	fillGaussian(&tensor.Blob{Data: top[0].Diff}, 1, r)
	prop := []bool{true, false}
	for b.Loop() {
		l.Forward(bottom, top)
		l.Backward(top, prop, bottom)
	}
}
