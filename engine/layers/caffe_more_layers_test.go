package layers

import (
	"testing"
)

// The PyTorch oracle for the layers of issue 22 (Clip, Swish, MVN, SPP,
// Filter, BatchReindex, Im2col, Parameter); the ports of Caffe's own tests
// are in each layer's test file, HDF5Output's in package data.

// moreCases are the layer configurations of torch_more_layers.json, by
// fixture name. noFD marks a forward-only case: MVN with a large eps, where
// Caffe's backward, dx = (dy − mean(dy) − y·mean(y·dy)) / (σ + eps), is
// not the derivative of its forward (exact only as eps → 0); dsgd keeps
// Caffe's.
func moreCases() map[string]caffeCase {
	mvn := func(v, across bool, eps float32) *MVNConfig {
		return &MVNConfig{NormalizeVariance: v, AcrossChannels: across, Eps: eps}
	}
	return map[string]caffeCase{
		"Clip":              {cfg: &ClipConfig{Min: -1, Max: 1.5}},
		"Swish":             {cfg: &SwishConfig{Beta: 1}},
		"SwishBeta":         {cfg: &SwishConfig{Beta: 1.5}},
		"MVN":               {cfg: mvn(true, false, 1e-9)},
		"MVNMeanOnly":       {cfg: mvn(false, false, 1e-9)},
		"MVNAcrossChannels": {cfg: mvn(true, true, 1e-9)},
		"MVNEps2D":          {cfg: mvn(true, true, 0.1), noFD: true},
		"SPPMax":            {cfg: &SPPConfig{PyramidHeight: 3}},
		"SPPAve":            {cfg: &SPPConfig{PyramidHeight: 3, Method: PoolAve}},
		"SPPAveOdd":         {cfg: &SPPConfig{PyramidHeight: 3, Method: PoolAve}},
		"SPPHeight1":        {cfg: &SPPConfig{PyramidHeight: 1}},
		"Filter":            {cfg: &FilterConfig{}, tops: 2, skip: map[int]bool{2: true}},
		"BatchReindex":      {cfg: &BatchReindexConfig{}, skip: map[int]bool{1: true}},
		"Im2col":            {cfg: &Im2colConfig{KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}},
		"Im2colPadDilated":  {cfg: &Im2colConfig{KernelH: 3, KernelW: 2, StrideH: 1, StrideW: 2, PadH: 2, PadW: 1, DilationH: 2, DilationW: 3}},
		"Parameter":         {cfg: &ParameterConfig{Shape: []int{2, 3, 4}}},
	}
}

// TestTorchMoreFixtures compares each layer's forward and backward with
// PyTorch's float64 results (testdata/torch_more_layers.json, made by
// scripts/torch_more_layers.py), then checks its Backward against finite
// differences on the same inputs.
func TestTorchMoreFixtures(t *testing.T) {
	runTorchFixtures(t, loadTorchFixture(t, "testdata/torch_more_layers.json"), moreCases())
}

// runTorchFixtures runs each fixture's case: forward and backward against
// PyTorch's float64 results, twice (the second pass on the reshaped
// tops), then Backward against finite differences (at the case's step,
// 1e-3 by default), unless the case is noFD; and it fails for a fixture
// without a case or a case without a fixture.
func runTorchFixtures(t *testing.T, fixtures []torchCase, cases map[string]caffeCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range fixtures {
		c, ok := cases[tc.Name]
		if !ok {
			t.Errorf("fixture %s has no Go case", tc.Name)
			continue
		}
		seen[tc.Name] = true
		tc.tol, tc.abs = c.tol, c.abs
		t.Run(tc.Name, func(t *testing.T) {
			l, bottom, top := tc.setUp(t, c)
			for range 2 { // twice: the second pass runs on the reshaped tops
				tc.checkForward(t, l, bottom, top)
				if c.noFD {
					continue
				}
				tc.checkBackward(t, l, bottom, top, true)
			}
			if c.noFD {
				return
			}
			step := c.step
			if step == 0 {
				step = 1e-3
			}
			checkGradients(t, l, bottom, top, gradCheck{Step: step, Threshold: 1e-2, Skip: c.skip})
		})
	}
	for name := range cases {
		if !seen[name] {
			t.Errorf("case %s has no fixture; rerun make torch-layers", name)
		}
	}
}

// TestMoreLayersNoAllocs: after a first pass, Forward and Backward of each
// layer allocate nothing (Filter on an unchanged selection).
func TestMoreLayersNoAllocs(t *testing.T) {
	checkFixturesNoAllocs(t, loadTorchFixture(t, "testdata/torch_more_layers.json"), moreCases(), false)
}

// checkFixturesNoAllocs sets each fixture's layer up and fails if, after
// a first pass, its Forward and Backward allocate; the bottoms propagated
// are those the fixture has diffs for, or all of them with propAll.
func checkFixturesNoAllocs(t *testing.T, fixtures []torchCase, cases map[string]caffeCase, propAll bool) {
	t.Helper()
	for _, tc := range fixtures {
		l, bottom, top := tc.setUp(t, cases[tc.Name])
		prop := make([]bool, len(bottom))
		for i := range prop {
			prop[i] = propAll || i < len(tc.BottomDiffs) && tc.BottomDiffs[i] != nil
		}
		step := func() {
			l.Forward(bottom, top)
			l.Backward(top, prop, bottom)
		}
		step()
		if n := testing.AllocsPerRun(5, step); n != 0 {
			t.Errorf("%s: %v allocations per Forward+Backward, want 0", tc.Name, n)
		}
	}
}
