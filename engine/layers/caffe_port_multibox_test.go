package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"dsgd/engine/tensor"
)

// The fork's test_multibox_loss_layer.cpp (weiliu89/caffe, branch ssd),
// ported: its bottoms (PriorBox's priors over a 2×2 map, 3 images, 3
// classes, its four ground-truth rows) and its sweeps over the
// parameters, each gradient checked alone as the fork does (the other
// loss left out of the top, as its propagate_down false does).

// mbBottoms returns the bottoms of the fork's tests
// (test_multibox_loss_layer.cpp): 3 images, 3 classes, 2×2 cells of 4
// priors (min_size 5, max_size 10, aspect_ratio 3 flipped, over a 20×20
// image), predictions from a seeded Gaussian, and the ground truth the
// fork's test writes without LMDB: image 0 one box of class 1, image 1
// none, image 2 three (the last difficult).
func mbBottoms(t *testing.T, shareLocation bool) []*tensor.Blob {
	t.Helper()
	const num, classes = 3, 3
	feat := tensor.NewBlob("feat")
	feat.Reshape(num, 5, 2, 2)
	img := tensor.NewBlob("img")
	img.Reshape(num, 3, 20, 20)
	pri := tensor.NewBlob("priors")
	pb := &PriorBoxConfig{MinSize: []float32{5}, MaxSize: []float32{10}, AspectRatio: []float32{3}, Flip: true, Offset: 0.5}
	l := newTestLayer(t, pb, Context{}, []*tensor.Blob{feat, img}, []*tensor.Blob{pri})
	l.Forward([]*tensor.Blob{feat, img}, []*tensor.Blob{pri})
	np := pri.Shape[2] / 4
	if np != 16 {
		t.Fatalf("%d priors, want the fork test's 16", np)
	}
	lc := 1
	if !shareLocation {
		lc = classes
	}
	r := rand.New(rand.NewPCG(1701, 0))
	loc := tensor.NewBlob("loc")
	loc.Reshape(num, np*lc*4)
	fillGaussian(loc, 1, r)
	conf := tensor.NewBlob("conf")
	conf.Reshape(num, np*classes)
	fillGaussian(conf, 1, r)
	gt := newBlobData([]int{1, 1, 4, 8}, []float32{
		0, 1, 0, 0.1, 0.1, 0.3, 0.3, 0,
		2, 1, 0, 0.1, 0.1, 0.3, 0.3, 0,
		2, 2, 0, 0.2, 0.2, 0.4, 0.4, 0,
		2, 2, 1, 0.6, 0.6, 0.8, 0.9, 1,
	})
	return []*tensor.Blob{loc, conf, pri, gt}
}

// TestCaffePortMultiBoxLoss ports the fork's test_multibox_loss_layer.cpp
// under its tests' names: TestSetUp, TestLocGradient, TestConfGradient.
func TestCaffePortMultiBoxLoss(t *testing.T) {
	t.Run("MultiBoxLossLayerTest.TestSetUp", mbCaffeSetUp)
	t.Run("MultiBoxLossLayerTest.TestLocGradient", func(t *testing.T) { mbGradientSweep(t, true) })
	t.Run("MultiBoxLossLayerTest.TestConfGradient", func(t *testing.T) { mbGradientSweep(t, false) })
}

// mbCaffeSetUp is the fork's TestSetUp: every share_location,
// match_type, use_prior_for_matching and mining_type it tries (mining
// only with shared locations) sets up over its bottoms, and runs forward.
func mbCaffeSetUp(t *testing.T) {
	for _, share := range []bool{true, false} {
		bottom := mbBottoms(t, share)
		for _, match := range []MultiBoxMatch{MatchBipartite, MatchPerPrediction} {
			for _, usePrior := range []bool{true, false} {
				for _, mining := range []MultiBoxMining{MineNone, MineMaxNegative, MineHardExample} {
					if !share && mining != MineNone {
						continue
					}
					cfg := mbDefaults()
					cfg.ShareLocation, cfg.Match, cfg.UsePriorForMatching, cfg.Mining = share, match, usePrior, mining
					top := []*tensor.Blob{tensor.NewBlob("loss")}
					l := newTestLayer(t, cfg, Context{}, bottom, top)
					l.Forward(bottom, top)
					if v := top[0].Data[0]; math.IsNaN(float64(v)) || v < 0 {
						t.Errorf("share %v match %d prior %v mining %v: loss %g", share, match, usePrior, mining, v)
					}
				}
			}
		}
	}
}

// mbDefaults is the fork's MultiBoxLossParameter defaults with the fork
// test's num_classes 3.
func mbDefaults() *MultiBoxLossConfig {
	return &MultiBoxLossConfig{
		LocLoss: LocSmoothL1, ConfLoss: ConfSoftmax, LocWeight: 1, NumClasses: 3, ShareLocation: true,
		Match: MatchPerPrediction, OverlapThreshold: 0.5, UsePriorForMatching: true, UseDifficultGT: true,
		NegPosRatio: 3, NegOverlap: 0.5, Code: CodeCorner, Mining: MineMaxNegative, SampleSize: 64,
	}
}

// mbGradientSweep runs the fork's TestLocGradient (loc true) or
// TestConfGradient: over its loss types, share_location, match_type,
// normalizations, use_difficult_gt and mining types (use_prior_for_matching
// true, as the fork's loop runs only that), the gradient of the one
// loss the propagate_down keeps against Caffe's exhaustive check
// (caffeGrad, the fork's step 1e-2 and threshold 1e-2).
func mbGradientSweep(t *testing.T, loc bool) {
	for k := range 2 {
		for _, share := range []bool{true, false} {
			bottom := mbBottoms(t, share)
			for _, match := range []MultiBoxMatch{MatchBipartite, MatchPerPrediction} {
				for _, norm := range []LossNormalization{NormBatchSize, NormFull, NormValid, NormNone} {
					for _, diff := range []bool{true, false} {
						for _, mining := range []MultiBoxMining{MineNone, MineMaxNegative, MineHardExample} {
							if !share && mining != MineNone {
								continue
							}
							cfg := mbDefaults()
							cfg.ShareLocation, cfg.Match, cfg.Normalization, cfg.UseDifficultGT, cfg.Mining = share, match, norm, diff, mining
							skip := map[int]bool{1: true, 2: true, 3: true}
							if loc {
								cfg.LocLoss, cfg.NoConfLoss = []MultiBoxLocLoss{LocL2, LocSmoothL1}[k], true
							} else {
								cfg.ConfLoss, cfg.NoLocLoss = []MultiBoxConfLoss{ConfSoftmax, ConfLogistic}[k], true
								skip = map[int]bool{0: true, 2: true, 3: true}
							}
							top := []*tensor.Blob{tensor.NewBlob("loss")}
							l := newTestLayer(t, cfg, Context{}, bottom, top)
							caffeGrad(t, l, bottom, top, gradCheck{Step: 1e-2, Threshold: 1e-2, Skip: skip})
							if t.Failed() {
								t.Fatalf("loc %v kind %d share %v match %d norm %d difficult %v mining %v", loc, k, share, match, norm, diff, mining)
							}
						}
					}
				}
			}
		}
	}
}
