package solver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"dsgd/engine/tensor"
)

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want it to contain %q", msg, want)
		}
	}()
	f()
}

// testSegs covers mixed multipliers, a frozen segment, a gap [13, 15) and a
// tail [40, 42) that belong to no segment, and segments out of offset order.
var testSegs = []Segment{
	{Off: 33, Len: 7, LRMult: 1, DecayMult: 1},
	{Off: 0, Len: 10, LRMult: 1, DecayMult: 1},
	{Off: 10, Len: 3, LRMult: 2, DecayMult: 0},  // a bias
	{Off: 15, Len: 10, LRMult: 0, DecayMult: 1}, // frozen
	{Off: 25, Len: 8, LRMult: 0.5, DecayMult: 2.5},
	{Off: 40, Len: 0, LRMult: 1, DecayMult: 1}, // empty
}

const testN = 42

func randVec(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

// The reference solver below re-implements Caffe's SGDSolver::ApplyUpdate
// as Caffe runs it: whole-blob vector passes (ClipGradients, Regularize,
// ComputeUpdateValue, Net::Update), each a BLAS-like loop, on a copy of the
// gradient. The solver fuses all of this into one loop per segment; the two
// must agree bit for bit.

func axpy(a float32, x, y []float32) { // y += a·x
	for i := range x {
		y[i] = y[i] + float32(a*x[i])
	}
}

func axpby(a float32, x []float32, b float32, y []float32) { // y = a·x + b·y, as scal then axpy
	for i := range y {
		y[i] = float32(b * y[i])
	}
	axpy(a, x, y)
}

func powx(x []float32, p float32, y []float32) {
	for i := range x {
		switch p {
		case 2:
			y[i] = x[i] * x[i]
		case 0.5:
			y[i] = float32(math.Sqrt(float64(x[i])))
		default:
			panic("powx")
		}
	}
}

type refSolver struct {
	cfg  Config // validated
	segs []Segment
	hist [][]float32
}

func newRef(t *testing.T, cfg Config, n int, segs []Segment) *refSolver {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &refSolver{cfg: cfg, segs: segs, hist: [][]float32{make([]float32, n)}}
	if cfg.Type == "Adam" || cfg.Type == "AdaDelta" {
		r.hist = append(r.hist, make([]float32, n))
	}
	return r
}

func (r *refSolver) step(iter int, rate float64, w, g []float32) {
	c := r.cfg
	diff := slices.Clone(g)
	if c.ClipGradients > 0 {
		var sumsq float64
		for _, sg := range r.segs {
			if sg.LRMult != 0 {
				for _, x := range diff[sg.Off : sg.Off+sg.Len] {
					sumsq += float64(x) * float64(x)
				}
			}
		}
		if norm := math.Sqrt(sumsq); norm > c.ClipGradients {
			f := float32(c.ClipGradients / norm)
			for i := range diff {
				diff[i] = diff[i] * f
			}
		}
	}
	for _, sg := range r.segs {
		if sg.LRMult == 0 {
			continue
		}
		lo, hi := sg.Off, sg.Off+sg.Len
		data, d := w[lo:hi], diff[lo:hi]
		// Regularize.
		if decay := float32(c.WeightDecay) * sg.DecayMult; decay != 0 {
			if c.Regularization == "L2" {
				axpy(decay, data, d)
			} else {
				sign := make([]float32, len(data))
				for i, x := range data {
					if x > 0 {
						sign[i] = 1
					} else if x < 0 {
						sign[i] = -1
					}
				}
				axpy(decay, sign, d)
			}
		}
		// ComputeUpdateValue: leaves the update in d.
		localRate := float32(rate * float64(sg.LRMult))
		mom := float32(c.Momentum)
		delta := float32(c.Delta)
		h := r.hist[0][lo:hi]
		upd := make([]float32, len(d))
		switch c.Type {
		case "SGD":
			axpby(localRate, d, mom, h)
			copy(d, h)
		case "Nesterov":
			copy(upd, h)
			axpby(localRate, d, mom, h)
			axpby(1+mom, h, -mom, upd)
			copy(d, upd)
		case "AdaGrad":
			powx(d, 2, upd)
			for i := range h {
				h[i] = upd[i] + h[i]
			}
			powx(h, 0.5, upd)
			for i := range upd {
				upd[i] += delta
				upd[i] = d[i] / upd[i]
			}
			axpby(localRate, upd, 0, d)
		case "RMSProp":
			dec := float32(c.RMSDecay)
			powx(d, 2, upd)
			axpby(1-dec, upd, dec, h)
			powx(h, 0.5, upd)
			for i := range upd {
				upd[i] += delta
				upd[i] = d[i] / upd[i]
			}
			axpby(localRate, upd, 0, d)
		case "Adam":
			b1, b2 := float32(c.Momentum), float32(c.Momentum2)
			m, v := h, r.hist[1][lo:hi]
			tt := float64(iter + 1)
			corr := math.Sqrt(1-math.Pow(float64(b2), tt)) / (1 - math.Pow(float64(b1), tt))
			axpby(1-b1, d, b1, m)
			for i := range d {
				upd[i] = d[i] * d[i]
			}
			axpby(1-b2, upd, b2, v)
			powx(v, 0.5, upd)
			for i := range upd {
				upd[i] += delta
				upd[i] = m[i] / upd[i]
			}
			scale := float32(rate * float64(sg.LRMult) * corr)
			for i := range d {
				d[i] = scale * upd[i]
			}
		case "AdaDelta":
			// AdaDeltaSolver::ComputeUpdateValue, call by call.
			h2 := r.hist[1][lo:hi]
			tmp := make([]float32, len(d))
			powx(d, 2, upd)
			axpby(1-mom, upd, mom, h)
			for i := range tmp {
				tmp[i] = delta
			}
			for i := range upd {
				upd[i] = tmp[i] + h2[i]
				tmp[i] = tmp[i] + h[i]
				upd[i] = upd[i] / tmp[i]
			}
			powx(upd, 0.5, upd)
			for i := range d {
				d[i] = d[i] * upd[i]
			}
			powx(d, 2, upd)
			axpby(1-mom, upd, mom, h2)
			for i := range d {
				d[i] = localRate * d[i]
			}
		}
		// Net::Update: data = data − diff.
		axpy(-1, d, data)
	}
}

var allTypes = []string{"SGD", "Nesterov", "AdaGrad", "RMSProp", "Adam", "AdaDelta"}

// ruleConfig returns a config of the given type with momentum as the type
// allows and a decaying policy.
func ruleConfig(typ string) Config {
	c := Config{Type: typ, BaseLR: 0.05, LRPolicy: "step", Gamma: 0.7, StepSize: 2, WeightDecay: 0.01}
	switch typ {
	case "SGD", "Nesterov":
		c.Momentum = 0.9
	case "Adam":
		c.Momentum = 0.9
		c.Momentum2 = 0.99
	case "RMSProp":
		c.RMSDecay = 0.9
	case "AdaDelta":
		c.Momentum = 0.95
		c.Delta = 1e-6
	}
	return c
}

func TestStepMatchesCaffeSequence(t *testing.T) {
	for _, typ := range allTypes {
		for _, regu := range []string{"L2", "L1"} {
			for _, clip := range []float64{0, 1.5} {
				name := fmt.Sprintf("%s/%s/clip=%v", typ, regu, clip)
				t.Run(name, func(t *testing.T) {
					cfg := ruleConfig(typ)
					cfg.Regularization = regu
					cfg.ClipGradients = clip
					cfg.WarmupIters = 2
					s, err := New(cfg, testN, testSegs)
					if err != nil {
						t.Fatal(err)
					}
					ref := newRef(t, cfg, testN, testSegs)
					rng := rand.New(rand.NewPCG(1, 2))
					w := randVec(rng, testN, 1)
					w[1] = 0 // sign(0) = 0 for L1
					w0 := slices.Clone(w)
					wr := slices.Clone(w)
					clipped := false
					for iter := range 7 {
						g := randVec(rng, testN, 1)
						g0 := slices.Clone(g)
						s.Step(iter, w, g)
						if !slices.Equal(g, g0) {
							t.Fatalf("iter %d: Step modified g", iter)
						}
						ref.step(iter, s.LR(iter), wr, g)
						if !bitsEqual(w, wr) {
							t.Fatalf("iter %d: w\n got %v\nwant %v", iter, w, wr)
						}
						for j := range ref.hist {
							if !bitsEqual(s.History()[j], ref.hist[j]) {
								t.Fatalf("iter %d: history %d\n got %v\nwant %v", iter, j, s.History()[j], ref.hist[j])
							}
						}
						var ss float64
						for _, x := range g {
							ss += float64(x) * float64(x)
						}
						clipped = clipped || (clip > 0 && math.Sqrt(ss) > clip)
					}
					if clip > 0 && !clipped {
						t.Fatal("test never exercised clipping")
					}
					// Frozen segment, gap and tail: weights and history untouched.
					for _, r := range [][2]int{{13, 25}, {40, 42}} {
						if !slices.Equal(w[r[0]:r[1]], w0[r[0]:r[1]]) {
							t.Errorf("w[%d:%d] changed: %v -> %v", r[0], r[1], w0[r[0]:r[1]], w[r[0]:r[1]])
						}
						for j, h := range s.History() {
							if slices.ContainsFunc(h[r[0]:r[1]], func(x float32) bool { return x != 0 }) {
								t.Errorf("history %d [%d:%d] changed: %v", j, r[0], r[1], h[r[0]:r[1]])
							}
						}
					}
					// Every other segment moved.
					for i, sg := range testSegs {
						if sg.LRMult != 0 && sg.Len > 0 && slices.Equal(w[sg.Off:sg.Off+sg.Len], w0[sg.Off:sg.Off+sg.Len]) {
							t.Errorf("segment %d did not move", i)
						}
					}
				})
			}
		}
	}
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestStepByHand checks one or two steps of each rule against values worked
// out by hand from the textbook formulas.
func TestStepByHand(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		seg  Segment
		w    float32
		gs   []float32 // one gradient per step
		want []float64 // w after each step
	}{
		{"SGD", Config{Type: "SGD", Momentum: 0.9}, Segment{LRMult: 1}, 1, []float32{2, 2}, []float64{0.8, 0.42}},
		{"SGD lr_mult", Config{Type: "SGD"}, Segment{LRMult: 2}, 1, []float32{2}, []float64{0.6}},
		{"Nesterov", Config{Type: "Nesterov", Momentum: 0.9}, Segment{LRMult: 1}, 1, []float32{2, 2},
			[]float64{0.62, 0.078}},
		{"AdaGrad", Config{Type: "AdaGrad"}, Segment{LRMult: 1}, 1, []float32{2, 2},
			[]float64{0.9, 0.9 - 0.2/math.Sqrt(8)}},
		{"RMSProp", Config{Type: "RMSProp", RMSDecay: 0.9}, Segment{LRMult: 1}, 1, []float32{2},
			[]float64{1 - 0.2/math.Sqrt(0.4)}},
		// Adam's first step is lr·sign(g) up to delta.
		{"Adam", Config{Type: "Adam", Momentum: 0.9}, Segment{LRMult: 1}, 1, []float32{2}, []float64{0.9}},
		{"Adam 2 steps", Config{Type: "Adam", Momentum: 0.9, Momentum2: 0.999}, Segment{LRMult: 1}, 1, []float32{2, -1},
			[]float64{0.9, 0.9 - 0.1*(math.Sqrt(1-0.999*0.999)/(1-0.81))*
				(0.9*0.2+0.1*-1)/math.Sqrt(0.999*0.004+0.001*1)}},
		{"AdaDelta", Config{Type: "AdaDelta", Momentum: 0.9, Delta: 1e-6}, Segment{LRMult: 1}, 1, []float32{2},
			[]float64{1 - 0.1*2*math.Sqrt(1e-6/(0.4+1e-6))}},
		{"L2 decay", Config{Type: "SGD", WeightDecay: 0.5}, Segment{LRMult: 1, DecayMult: 2}, 1, []float32{0},
			[]float64{0.9}},
		{"L1 decay", Config{Type: "SGD", WeightDecay: 0.5, Regularization: "L1"}, Segment{LRMult: 1, DecayMult: 2},
			-2, []float32{0}, []float64{-1.9}},
		{"L1 at zero", Config{Type: "SGD", WeightDecay: 0.5, Regularization: "L1"}, Segment{LRMult: 1, DecayMult: 2},
			0, []float32{0}, []float64{0}},
		{"decay_mult 0", Config{Type: "SGD", WeightDecay: 0.5}, Segment{LRMult: 1}, 1, []float32{0}, []float64{1}},
		{"frozen", Config{Type: "SGD", WeightDecay: 0.5}, Segment{LRMult: 0, DecayMult: 1}, 1, []float32{5},
			[]float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.BaseLR, cfg.LRPolicy = 0.1, "fixed"
			seg := tt.seg
			seg.Len = 1
			s, err := New(cfg, 1, []Segment{seg})
			if err != nil {
				t.Fatal(err)
			}
			w := []float32{tt.w}
			for i, g := range tt.gs {
				s.Step(i, w, []float32{g})
				if d := math.Abs(float64(w[0]) - tt.want[i]); d > 2e-6 {
					t.Fatalf("step %d: w = %.9g, want %.9g", i, w[0], tt.want[i])
				}
			}
		})
	}
}

func TestClipGradients(t *testing.T) {
	tests := []struct {
		name  string
		clip  float64
		g     []float32
		wantW []float32
	}{
		// |(3, 4)| = 5 > 1: scaled to (0.6, 0.8). The frozen element's
		// gradient is no parameter gradient and stays out of the norm.
		{"clipped", 1, []float32{3, 4, 1000}, []float32{-0.6, -0.8, 0}},
		{"just over the bound", 4, []float32{3, 4, 1000}, []float32{-2.4, -3.2, 0}},
		{"under the bound", 10, []float32{3, 4, 1000}, []float32{-3, -4, 0}},
		{"at the bound", 5, []float32{3, 4, 1000}, []float32{-3, -4, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{BaseLR: 1, LRPolicy: "fixed", ClipGradients: tt.clip}
			s, err := New(cfg, 3, []Segment{{Off: 0, Len: 1, LRMult: 1}, {Off: 1, Len: 1, LRMult: 1},
				{Off: 2, Len: 1, LRMult: 0}})
			if err != nil {
				t.Fatal(err)
			}
			w := make([]float32, 3)
			g := slices.Clone(tt.g)
			s.Step(0, w, g)
			for i := range w {
				if math.Abs(float64(w[i]-tt.wantW[i])) > 1e-6 {
					t.Fatalf("w = %v, want %v", w, tt.wantW)
				}
			}
			if !slices.Equal(g, tt.g) {
				t.Errorf("g modified: %v", g)
			}
		})
	}
}

// TestPeerCaffeSGD checks the SGD rule against the peer's CaffeSGD
// (peer/torch_lenet.py): g = grad + wd·w; v = momentum·v + (lr·lr_mult)·g;
// w −= v, with lr from the inv policy in float64 and lr·lr_mult rounded once
// to float32 (as torch does with alpha), biases at lr_mult 2.
func TestPeerCaffeSGD(t *testing.T) {
	segs := []Segment{
		{Off: 0, Len: 50, LRMult: 1, DecayMult: 1}, {Off: 50, Len: 5, LRMult: 2, DecayMult: 1},
		{Off: 55, Len: 30, LRMult: 1, DecayMult: 1}, {Off: 85, Len: 3, LRMult: 2, DecayMult: 1},
	}
	const n = 88
	cfg := Config{Type: "SGD", BaseLR: 0.01, Momentum: 0.9, WeightDecay: 5e-4,
		LRPolicy: "inv", Gamma: 1e-4, Power: 0.75}
	s, err := New(cfg, n, segs)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	w := randVec(rng, n, 0.1)
	pw := slices.Clone(w)
	pv := make([]float32, n)
	mom, wd := float32(0.9), float32(5e-4)
	for iter := range 20 {
		it := iter * 997 // reach where inv has decayed
		g := randVec(rng, n, 0.01)
		s.Step(it, w, g)
		lr := 0.01 * math.Pow(1+1e-4*float64(it), -0.75)
		for _, sg := range segs {
			alpha := float32(lr * float64(sg.LRMult))
			for i := sg.Off; i < sg.Off+sg.Len; i++ {
				gi := g[i] + float32(wd*pw[i])
				pv[i] = float32(pv[i]*mom) + float32(alpha*gi)
				pw[i] -= pv[i]
			}
		}
		if !bitsEqual(w, pw) {
			t.Fatalf("iter %d: w\n got %v\nwant %v", it, w, pw)
		}
	}
}

func TestStepSegmentEqualsStep(t *testing.T) {
	for _, typ := range allTypes {
		t.Run(typ, func(t *testing.T) {
			cfg := ruleConfig(typ)
			a, err := New(cfg, testN, testSegs)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.CheckSegmentwise(); err != nil {
				t.Fatal(err)
			}
			b, _ := New(cfg, testN, testSegs)
			rng := rand.New(rand.NewPCG(3, 4))
			wa := randVec(rng, testN, 1)
			wb := slices.Clone(wa)
			order := []int{0, 1, 2, 3, 4, 5}
			for iter := range 6 {
				g := randVec(rng, testN, 1)
				a.Step(iter, wa, g)
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, k := range order {
					b.StepSegment(iter, k, wb, g)
				}
				if !bitsEqual(wa, wb) {
					t.Fatalf("iter %d: StepSegment w\n got %v\nwant %v", iter, wb, wa)
				}
				for j := range a.History() {
					if !bitsEqual(a.History()[j], b.History()[j]) {
						t.Fatalf("iter %d: history %d differs", iter, j)
					}
				}
			}
		})
	}
}

func TestStepSegmentTouchesOnlyItsSegment(t *testing.T) {
	s, err := New(ruleConfig("Adam"), testN, testSegs)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	w := randVec(rng, testN, 1)
	w0 := slices.Clone(w)
	g := randVec(rng, testN, 1)
	s.StepSegment(0, 1, w, g) // [0, 10)
	for i := range w {
		if moved := w[i] != w0[i]; moved != (i < 10) {
			t.Errorf("w[%d]: moved = %v", i, moved)
		}
		if h := s.History()[0][i]; (h != 0) != (i < 10) {
			t.Errorf("m[%d] = %v", i, h)
		}
	}
}

func TestSegmentwiseWithClip(t *testing.T) {
	cfg := ruleConfig("SGD")
	cfg.ClipGradients = 1
	s, err := New(cfg, testN, testSegs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSegmentwise(); err == nil || !strings.Contains(err.Error(), "clip_gradients") {
		t.Fatalf("CheckSegmentwise = %v, want a clip_gradients error", err)
	}
	w, g := make([]float32, testN), make([]float32, testN)
	mustPanic(t, "StepSegment with clip_gradients", func() { s.StepSegment(0, 0, w, g) })
}

func TestNew(t *testing.T) {
	cfg := Config{BaseLR: 1, LRPolicy: "fixed"}
	tests := []struct {
		name string
		n    int
		segs []Segment
		want string
	}{
		{"ok", 10, []Segment{{Off: 5, Len: 5, LRMult: 1}, {Off: 0, Len: 5, LRMult: 1}}, ""},
		{"ok empty at end", 10, []Segment{{Off: 10, Len: 0}}, ""},
		{"ok empty inside another", 10, []Segment{{Off: 0, Len: 10}, {Off: 3, Len: 0}}, ""},
		{"negative n", -1, nil, "parameter count -1"},
		{"past the end", 10, []Segment{{Off: 8, Len: 3}}, "segment 0 [8, 8+3) lies outside the 10"},
		{"negative off", 10, []Segment{{Off: -1, Len: 3}}, "segment 0 [-1, -1+3) lies outside"},
		{"negative len", 10, []Segment{{Off: 1, Len: -1}}, "lies outside"},
		{"huge len", 10, []Segment{{Off: 1, Len: math.MaxInt}}, "lies outside"},
		{"overlap", 10, []Segment{{Off: 4, Len: 6}, {Off: 0, Len: 5}}, "segments 1 [0, 5) and 0 [4, 10) overlap"},
		{"NaN lr_mult", 10, []Segment{{Off: 0, Len: 1, LRMult: float32(nan())}}, "lr_mult NaN"},
		{"Inf decay_mult", 10, []Segment{{Off: 0, Len: 1, DecayMult: float32(inf())}}, "decay_mult +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(cfg, tt.n, tt.segs)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.N() != tt.n || !slices.Equal(s.Segments(), tt.segs) {
					t.Fatalf("N %d, Segments %v", s.N(), s.Segments())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNewCopiesInputs(t *testing.T) {
	segs := []Segment{{Off: 0, Len: 2, LRMult: 1}}
	cfg := Config{BaseLR: 1, LRPolicy: "multistep", Gamma: 0.5, StepValues: []int{1}}
	s, err := New(cfg, 2, segs)
	if err != nil {
		t.Fatal(err)
	}
	segs[0].LRMult = 0
	cfg.StepValues[0] = 100
	if s.Segments()[0].LRMult != 1 || s.LR(1) != 0.5 || s.Config().StepValues[0] != 1 {
		t.Fatal("New kept a reference to its arguments")
	}
	if got := s.Config().Type; got != "SGD" {
		t.Fatalf("Config().Type = %q, want the filled default SGD", got)
	}
}

func TestReset(t *testing.T) {
	for _, typ := range allTypes {
		s, err := New(ruleConfig(typ), testN, testSegs)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		w, g := randVec(rng, testN, 1), randVec(rng, testN, 1)
		s.Step(0, w, g)
		h := s.History()
		if !slices.ContainsFunc(h[0], func(x float32) bool { return x != 0 }) {
			t.Fatalf("%s: history stayed zero after a step", typ)
		}
		s.Reset()
		for j, b := range s.History() {
			if slices.ContainsFunc(b, func(x float32) bool { return x != 0 }) {
				t.Fatalf("%s: history %d not zero after Reset", typ, j)
			}
		}
		// A reset solver continues exactly like a fresh one.
		f, _ := New(ruleConfig(typ), testN, testSegs)
		w2 := slices.Clone(w)
		s.Step(0, w, g)
		f.Step(0, w2, g)
		if !bitsEqual(w, w2) {
			t.Fatalf("%s: reset solver differs from a fresh one", typ)
		}
	}
}

func TestStepPanics(t *testing.T) {
	s, err := New(ruleConfig("SGD"), testN, testSegs)
	if err != nil {
		t.Fatal(err)
	}
	ok := make([]float32, testN)
	short := make([]float32, testN-1)
	mustPanic(t, "len(w) = 41", func() { s.Step(0, short, ok) })
	mustPanic(t, "len(g) = 41", func() { s.Step(0, ok, short) })
	mustPanic(t, "len(w) = 41", func() { s.StepSegment(0, 0, short, ok) })
	mustPanic(t, "segment 6 out of range", func() { s.StepSegment(0, 6, ok, ok) })
	mustPanic(t, "segment -1 out of range", func() { s.StepSegment(0, -1, ok, ok) })
}

func TestStepDoesNotAllocate(t *testing.T) {
	for _, typ := range allTypes {
		for _, clip := range []float64{0, 1} {
			cfg := ruleConfig(typ)
			cfg.ClipGradients = clip
			cfg.LRPolicy, cfg.StepValues = "multistep", []int{1, 3}
			s, err := New(cfg, testN, testSegs)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			w, g := randVec(rng, testN, 1), randVec(rng, testN, 1)
			iter := 0
			if a := testing.AllocsPerRun(20, func() { s.Step(iter, w, g); iter++ }); a != 0 {
				t.Errorf("%s clip %v: Step allocates %v times", typ, clip, a)
			}
			if clip == 0 {
				if a := testing.AllocsPerRun(20, func() { s.StepSegment(iter, 1, w, g); iter++ }); a != 0 {
					t.Errorf("%s: StepSegment allocates %v times", typ, a)
				}
			}
		}
	}
}

// lenetSegs is Caffe's LeNet: conv1, conv2, ip1, ip2 weights at lr_mult 1
// and biases at lr_mult 2; 431080 parameters.
func lenetSegs() (int, []Segment) {
	var segs []Segment
	off := 0
	for _, blob := range []struct {
		n  int
		lr float32
	}{{500, 1}, {20, 2}, {25000, 1}, {50, 2}, {400000, 1}, {500, 2}, {5000, 1}, {10, 2}} {
		segs = append(segs, Segment{Off: off, Len: blob.n, LRMult: blob.lr, DecayMult: 1})
		off += blob.n
	}
	return off, segs
}

func TestLenetSegs(t *testing.T) {
	if n, _ := lenetSegs(); n != 431080 {
		t.Fatalf("LeNet has %d parameters, want 431080", n)
	}
}

func BenchmarkStep(b *testing.B) {
	n, segs := lenetSegs()
	for _, threads := range []int{1, 2} {
		for _, typ := range allTypes {
			b.Run(fmt.Sprintf("%s/threads%d", typ, threads), func(b *testing.B) {
				cfg := ruleConfig(typ)
				cfg.LRPolicy, cfg.Gamma, cfg.Power = "inv", 1e-4, 0.75
				s, err := New(cfg, n, segs)
				if err != nil {
					b.Fatal(err)
				}
				s.SetThreads(threads)
				rng := rand.New(rand.NewPCG(1, 1))
				w, g := randVec(rng, n, 0.1), randVec(rng, n, 0.01)
				b.SetBytes(int64(4 * n))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					s.Step(i, w, g)
				}
			})
		}
	}
}

// TestStepThreadsBitIdentical checks that Step gives bit for bit the same
// weights and history on any number of threads, for every rule, with and
// without clipping, over segments that are frozen, empty, small, or cut
// between threads at arbitrary points.
func TestStepThreadsBitIdentical(t *testing.T) {
	const n = 5*stepWorkPerThread + 123
	segs := []Segment{
		{Off: 0, Len: 1000, LRMult: 1, DecayMult: 1},
		{Off: 1000, Len: 7, LRMult: 2, DecayMult: 0},
		{Off: 1007, Len: 0, LRMult: 1, DecayMult: 1},
		{Off: 1007, Len: 3 * stepWorkPerThread, LRMult: 1, DecayMult: 1},
		{Off: 1007 + 3*stepWorkPerThread, Len: 500, LRMult: 0, DecayMult: 1}, // frozen
		{Off: 1507 + 3*stepWorkPerThread, Len: n - 1607 - 3*stepWorkPerThread, LRMult: 0.5, DecayMult: 2},
		// the last 100 elements lie in no segment
	}
	for _, typ := range allTypes {
		for _, clip := range []float64{0, 1} {
			for _, l1 := range []bool{false, true} {
				cfg := ruleConfig(typ)
				cfg.ClipGradients = clip
				if l1 {
					cfg.Regularization = "L1"
				}
				var ws, hs [][]float32
				// Negative: a shared pool of that many threads (SetPool).
				for _, threads := range []int{1, 2, 3, 4, -2, -3} {
					s, err := New(cfg, n, segs)
					if err != nil {
						t.Fatal(err)
					}
					if threads < 0 {
						p := tensor.NewPool(-threads)
						defer p.Close()
						s.SetThreads(2) // replaced, and closed, by SetPool
						s.SetPool(p)
						threads = -threads
					} else {
						s.SetThreads(threads)
					}
					if s.Threads() != threads {
						t.Fatalf("Threads() = %d after SetThreads or SetPool of %d", s.Threads(), threads)
					}
					rng := rand.New(rand.NewPCG(5, 6))
					w := randVec(rng, n, 1)
					for iter := range 3 {
						g := randVec(rng, n, 1)
						s.Step(iter, w, g)
					}
					var h []float32
					for _, b := range s.History() {
						h = append(h, b...)
					}
					ws, hs = append(ws, w), append(hs, h)
				}
				for i := 1; i < len(ws); i++ {
					if !bitsEqual(ws[i], ws[0]) || !bitsEqual(hs[i], hs[0]) {
						t.Errorf("%s clip %v L1 %v: %d threads differ from one", typ, clip, l1, i+1)
					}
				}
				// The elements outside every segment and in the frozen one
				// are untouched: compare with a fresh draw.
				rng := rand.New(rand.NewPCG(5, 6))
				w0 := randVec(rng, n, 1)
				fr := segs[4]
				if !bitsEqual(ws[1][fr.Off:fr.Off+fr.Len], w0[fr.Off:fr.Off+fr.Len]) || !bitsEqual(ws[1][n-100:], w0[n-100:]) {
					t.Errorf("%s clip %v L1 %v: frozen or uncovered weights changed", typ, clip, l1)
				}
			}
		}
	}
}

func TestSetThreadsNoAllocsAndReset(t *testing.T) {
	n, segs := lenetSegs()
	s, err := New(ruleConfig("SGD"), n, segs)
	if err != nil {
		t.Fatal(err)
	}
	s.SetThreads(2)
	rng := rand.New(rand.NewPCG(1, 1))
	w, g := randVec(rng, n, 1), randVec(rng, n, 1)
	iter := 0
	if a := testing.AllocsPerRun(20, func() { s.Step(iter, w, g); iter++ }); a != 0 {
		t.Errorf("Step on 2 threads allocates %v times", a)
	}
	for _, k := range []int{0, -3, 1} {
		s.SetThreads(k)
		if s.Threads() != 1 {
			t.Errorf("SetThreads(%d): Threads() = %d, want 1", k, s.Threads())
		}
		s.Step(iter, w, g) // runs on the caller, pool gone
		iter++
	}
}

// TestStepSegmentConcurrent steps distinct segments from separate
// goroutines, as the overlap scheme does; run under -race it checks the
// documented concurrency contract, and the result must equal Step's.
func TestStepSegmentConcurrent(t *testing.T) {
	cfg := ruleConfig("Adam")
	a, _ := New(cfg, testN, testSegs)
	b, err := New(cfg, testN, testSegs)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	wa := randVec(rng, testN, 1)
	wb := slices.Clone(wa)
	for iter := range 3 {
		g := randVec(rng, testN, 1)
		a.Step(iter, wa, g)
		var wg sync.WaitGroup
		for k := range testSegs {
			wg.Go(func() { b.StepSegment(iter, k, wb, g) })
		}
		wg.Wait()
	}
	if !bitsEqual(wa, wb) || !histEqual(a.History(), b.History()) {
		t.Fatal("concurrent StepSegment differs from Step")
	}
}
