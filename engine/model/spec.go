package model

import "dsgd/engine/layers"

// Spec is one phase's network: the external inputs (blobs a data source
// fills: Caffe's Data and Input layers) and the compute layers in
// definition order. The caffedef package produces one Spec per phase from a
// prototxt NetParameter, phase filtering (include/exclude) already applied.
type Spec struct {
	Name string
	// Inputs names the blobs fed from outside, in order ("data", "label").
	Inputs []string
	Layers []LayerSpec
	// ForceBackward is Caffe's force_backward: every layer runs Backward,
	// every bottom that the layer can differentiate gets a gradient (the
	// inputs too) and every param gets one whatever its lr_mult.
	ForceBackward bool
}

// RecurrentLayers names the recurrent layers of s (LSTM, RNN: see
// LayerSpec.Recurrent), in definition order.
func (s Spec) RecurrentLayers() []string {
	var names []string
	for _, l := range s.Layers {
		if l.Recurrent() {
			names = append(names, l.Name)
		}
	}
	return names
}

// LayerSpec is one layer of a Spec: Caffe's LayerParameter without the
// type-specific message, which Config carries.
type LayerSpec struct {
	Name   string
	Bottom []string
	Top    []string
	// Params holds per-param-blob settings (Caffe's param { }); missing
	// entries mean name "", lr_mult 1, decay_mult 1.
	Params []ParamSpec
	// LossWeight holds one weight per top (Caffe's loss_weight); empty
	// means 1 for top 0 of a LossLayer and 0 elsewhere.
	LossWeight []float32
	// PropagateDown holds Caffe's propagate_down per bottom; empty means
	// "as needed".
	PropagateDown []bool
	Config        layers.Config
	// Pos locates the layer in its source ("lenet.prototxt:12:1") for
	// error messages; may be empty.
	Pos string
}

// ParamSpec is Caffe's ParamSpec.
type ParamSpec struct {
	// Name shares the blob with every other param of the same name.
	Name      string
	LRMult    float32
	DecayMult float32
	// LRSet and DecaySet say that the file gave lr_mult and decay_mult:
	// a layer sharing a param adopts the values its owner left unset, and
	// two values given for one shared param must agree (as in Caffe).
	LRSet, DecaySet bool
	// Permissive is share_mode: PERMISSIVE: a shared param needs only the
	// owner's count, not its shape.
	Permissive bool
}

// Recurrent reports whether l is a recurrent layer (LSTM, RNN), which
// reads its bottoms' first axis as time steps: the rows of its batch are
// a sequence, in order.
func (l LayerSpec) Recurrent() bool {
	switch l.Config.(type) {
	case *layers.LSTMConfig, *layers.RNNConfig:
		return true
	}
	return false
}
