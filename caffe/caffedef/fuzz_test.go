package caffedef

import (
	"os"
	"slices"
	"testing"

	"dsgd/engine/layers"
)

func addFile(f *testing.F, path string) {
	src, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(src)
}

func FuzzParseNet(f *testing.F) {
	addFile(f, "testdata/lenet_train_test.prototxt")
	addFile(f, "testdata/cifar10_quick_train_test.prototxt")
	for _, s := range []string{
		net(`layer { name: "c" type: "Convolution" bottom: "data" top: "c" convolution_param { num_output: 2 kernel_h: 2 kernel_w: 3 } }`),
		net(`layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { global_pooling: true pool: AVE } }`),
		net(`layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data" top: "e" eltwise_param { coeff: [1, 2] } }`),
		`input: "x" input_dim: [1, 2, 3, 4]`,
		`layer { name: "d" type: "Input" top: "a" input_param { shape { dim: 1 } } }`,
		"layers { name: \"r\" type: RELU bottom: \"x\" top: \"x\" }",
		net(`layer { type: "Slice" bottom: "data" top: "a" top: "b" slice_param { axis: 1 } }`),
		forkNet,
		roiNet,
		psroiNet,
		smoothL1Net,
		net(`layer { name: "i" type: "Interp" bottom: "data" top: "i" interp_param { shrink_factor: 2 zoom_factor: 3 pad_end: -1 } }`),
		net(`layer { name: "d" type: "DepthwiseConvolution" bottom: "data" top: "d" convolution_param { num_output: 6 group: 3 kernel_h: 3 kernel_w: 1 } }`),
		net(`layer { name: "p" type: "Permute" bottom: "data" top: "p" permute_param { order: [0, 3, 1] } }`),
		net(`layer { name: "pb" type: "PriorBox" bottom: "data" bottom: "data" top: "pb" prior_box_param { min_size: 4 max_size: 9 aspect_ratio: 2 variance: [0.1, 0.1, 0.2, 0.2] step_h: 2 step_w: 3 } }`),
		net(`layer { name: "do" type: "DetectionOutput" bottom: "data" bottom: "data" bottom: "data" top: "do" detection_output_param { num_classes: 3 nms_param { nms_threshold: 0.45 top_k: 4 eta: 0.9 } code_type: CENTER_SIZE keep_top_k: 2 save_output_param { label_map_file: "l" } } }`),
		net(`layer { name: "mb" type: "MultiBoxLoss" bottom: "data" bottom: "data" bottom: "data" bottom: "label" top: "mb" propagate_down: [true, true, false, false] multibox_loss_param { loc_loss_type: L2 conf_loss_type: LOGISTIC loc_weight: 2 num_classes: 2 share_location: true match_type: BIPARTITE overlap_threshold: 0.6 use_prior_for_matching: false background_label_id: 0 use_difficult_gt: false do_neg_mining: true neg_pos_ratio: 2 neg_overlap: 0.4 code_type: CENTER_SIZE encode_variance_in_target: true map_object_to_agnostic: true ignore_cross_boundary_bbox: true bp_inside: true mining_type: HARD_EXAMPLE nms_param { nms_threshold: 0.5 top_k: 20 eta: 1 } sample_size: 16 use_prior_for_nms: true } loss_param { normalization: FULL } }`),
		net(`layer { name: "py" type: "Python" top: "x" include { phase: TRAIN } python_param { module: "m" layer: "L" } }`),
		net(`layer { name: "u" type: "Frob" bottom: "data" top: "u" include { stage: "s" } frob_param { x: 1 } }`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		n, err := ParseNet("fuzz.prototxt", src)
		if err != nil {
			return
		}
		for _, l := range n.Layers {
			if l.Err() != nil {
				// Refused where a net includes it, never read there.
				if l.Compute != nil || l.Data != nil {
					t.Fatalf("layer %q (%v) has Compute %v, Data %v", l.Name, l.Err(), l.Compute, l.Data)
				}
				continue
			}
			if (l.Compute == nil) == (l.Data == nil) {
				t.Fatalf("layer %q: Compute %v, Data %v", l.Name, l.Compute, l.Data)
			}
			if l.Compute != nil && l.Compute.Config.Type() != l.Type {
				t.Fatalf("layer %q of type %s has config %s", l.Name, l.Type, l.Compute.Config.Type())
			}
		}
		for _, p := range []layers.Phase{layers.Train, layers.Test} {
			pn, err := n.Phase(p)
			if err != nil {
				continue
			}
			for _, l := range pn.Spec.Layers {
				if l.Config == nil {
					t.Fatalf("%s net: layer %q has no config", p, l.Name)
				}
			}
			var tops []string
			for _, d := range pn.Data {
				tops = append(tops, d.Tops...)
			}
			if !slices.Equal(tops, pn.Spec.Inputs) {
				t.Fatalf("Inputs %q, data tops %q", pn.Spec.Inputs, tops)
			}
		}
	})
}

func FuzzParseSolver(f *testing.F) {
	addFile(f, "testdata/lenet_solver.prototxt")
	addFile(f, "testdata/cifar10_quick_solver.prototxt")
	for _, s := range []string{
		`base_lr: 0.1 lr_policy: "multistep" gamma: 0.5 stepvalue: [10, 20] type: "Adam"`,
		`base_lr: 0.1 lr_policy: "poly" power: 1 max_iter: 10 solver_type: RMSPROP`,
		`test_iter: 1 test_interval: 10 net: "n"`, // Caffe's SolverTest: no base_lr, no lr_policy
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := ParseSolver("fuzz.prototxt", src)
		if err != nil {
			return
		}
		// Without base_lr or lr_policy it is read, as Caffe reads it, and
		// CheckTrain refuses it; a solver that trains has both.
		trains := s.CheckTrain() == nil
		if trains && !(s.Solver.BaseLR > 0) || trains && !slices.Contains(lrPolicies(), s.Solver.LRPolicy) ||
			s.Solver.LRPolicy != "" && !slices.Contains(lrPolicies(), s.Solver.LRPolicy) || s.Solver.MaxIter != s.MaxIter {
			t.Fatalf("accepted an invalid solver: %+v (CheckTrain: %v)", s, s.CheckTrain())
		}
	})
}

// FuzzUpgrade: Upgrade never panics, and what it returns reads back and
// needs no further upgrade.
func FuzzUpgrade(f *testing.F) {
	addFile(f, v1CaffeNet)
	addFile(f, "testdata/lenet_solver.prototxt")
	for _, s := range []string{
		"input: \"data\" input_dim: [1, 3, 4, 4]\nlayers { name: \"r\" type: RELU bottom: \"data\" top: \"data\" blobs_lr: 1 param: \"w\" }",
		"layers { name: \"d\" type: DATA top: \"x\" data_param { source: \"s\" batch_size: 2 scale: 0.5 mirror: true } transform_param { crop_size: 1 } }",
		"base_lr: 0.1 lr_policy: \"fixed\" solver_type: ADADELTA momentum: 0.9",
		"layers { layer { name: \"a\" } }",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, _, err := Upgrade("fuzz.prototxt", src)
		if err != nil {
			return
		}
		again, notes, err := Upgrade("again.prototxt", out)
		if err != nil || len(notes) != 0 || string(again) != string(out) {
			t.Fatalf("upgraded text does not read back unchanged: notes %q err %v\n%s", notes, err, out)
		}
	})
}
