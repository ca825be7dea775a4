package caffedef

import "dsgd/engine/layers"

// This file decodes Caffe's recurrent layers: LSTM and RNN, which share
// recurrent_param, and LSTMUnit, which has no param message.

// decodeRecurrent decodes an LSTM, RNN or LSTMUnit layer.
func decodeRecurrent(l *LayerDef, param func(string) *reader) layers.Config {
	if l.Type == "LSTMUnit" {
		return &layers.LSTMUnitConfig{}
	}
	p := param("recurrent_param")
	c := layers.RecurrentConfig{
		NumOutput:    p.int("num_output", 0, 1, maxI32),
		DebugInfo:    p.bool("debug_info", false),
		ExposeHidden: p.bool("expose_hidden", false),
	}
	if p.ok() && !p.has("num_output") {
		p.d.failf(p.m.Pos, "%s needs num_output", p.ctx)
	}
	c.WeightFiller = filler(p, "weight_filler", defaultFiller())
	c.BiasFiller = filler(p, "bias_filler", defaultFiller())
	p.finish()
	if l.Type == "RNN" {
		return &layers.RNNConfig{RecurrentConfig: c}
	}
	return &layers.LSTMConfig{RecurrentConfig: c}
}
