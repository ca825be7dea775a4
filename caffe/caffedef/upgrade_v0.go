package caffedef

import (
	"fmt"
	"slices"

	"dsgd/caffe/prototxt"
)

// This file upgrades Caffe's V0 net format (before 2014: a V0 layer nested
// in each "layers" block, "layers { layer { name: "conv1" type: "conv"
// num_output: 96 kernelsize: 11 } bottom: "data" top: "conv1" }") to the
// V1 format, as Caffe's UpgradeV0Net does; upgradeV1 then takes it to the
// current one. Padding layers are folded into the convolution or pooling
// that reads them (UpgradeV0PaddingLayers), and each flat V0 field moves
// into the *_param message of the layer type that uses it. A field the type
// does not use is dropped with a note, as Caffe drops it with a warning.

// v0Types maps V0LayerParameter.type strings to V1 LayerType names.
var v0Types = map[string]string{
	"accuracy": "ACCURACY", "bnll": "BNLL", "concat": "CONCAT", "conv": "CONVOLUTION",
	"data": "DATA", "dropout": "DROPOUT", "euclidean_loss": "EUCLIDEAN_LOSS",
	"flatten": "FLATTEN", "hdf5_data": "HDF5_DATA", "hdf5_output": "HDF5_OUTPUT",
	"im2col": "IM2COL", "images": "IMAGE_DATA", "infogain_loss": "INFOGAIN_LOSS",
	"innerproduct": "INNER_PRODUCT", "lrn": "LRN",
	"multinomial_logistic_loss": "MULTINOMIAL_LOGISTIC_LOSS", "pool": "POOLING",
	"relu": "RELU", "sigmoid": "SIGMOID", "softmax": "SOFTMAX", "softmax_loss": "SOFTMAX_LOSS",
	"split": "SPLIT", "tanh": "TANH", "window_data": "WINDOW_DATA",
}

// v0Field says where a flat V0 field goes: the *_param message (and field
// name) for each layer type that uses it; "*" is any type.
type v0Field struct {
	to   string            // field name in the target message ("" = same)
	msgs map[string]string // V0 type -> target message
}

var (
	convIP   = map[string]string{"conv": "convolution_param", "innerproduct": "inner_product_param"}
	convPool = map[string]string{"conv": "convolution_param", "pool": "pooling_param"}
	dataSrc  = map[string]string{"data": "data_param", "hdf5_data": "hdf5_data_param", "images": "image_data_param", "window_data": "window_data_param"}
	lrn      = map[string]string{"lrn": "lrn_param"}
	window   = map[string]string{"window_data": "window_data_param"}
	images   = map[string]string{"images": "image_data_param"}
	anyType  = map[string]string{"*": "transform_param"}
)

var v0Fields = map[string]v0Field{
	"num_output":       {"", convIP},
	"biasterm":         {"bias_term", convIP},
	"weight_filler":    {"", convIP},
	"bias_filler":      {"", convIP},
	"pad":              {"", convPool},
	"kernelsize":       {"kernel_size", convPool},
	"group":            {"", map[string]string{"conv": "convolution_param"}},
	"stride":           {"", convPool},
	"pool":             {"", map[string]string{"pool": "pooling_param"}},
	"dropout_ratio":    {"", map[string]string{"dropout": "dropout_param"}},
	"local_size":       {"", lrn},
	"alpha":            {"", lrn},
	"beta":             {"", lrn},
	"k":                {"", lrn},
	"source":           {"", map[string]string{"data": "data_param", "hdf5_data": "hdf5_data_param", "images": "image_data_param", "window_data": "window_data_param", "infogain_loss": "infogain_loss_param"}},
	"scale":            {"", anyType},
	"meanfile":         {"mean_file", anyType},
	"batchsize":        {"batch_size", dataSrc},
	"cropsize":         {"crop_size", anyType},
	"mirror":           {"", anyType},
	"rand_skip":        {"", map[string]string{"data": "data_param", "images": "image_data_param"}},
	"shuffle_images":   {"shuffle", images},
	"new_height":       {"", images},
	"new_width":        {"", images},
	"concat_dim":       {"", map[string]string{"concat": "concat_param"}},
	"det_fg_threshold": {"fg_threshold", window},
	"det_bg_threshold": {"bg_threshold", window},
	"det_fg_fraction":  {"fg_fraction", window},
	"det_context_pad":  {"context_pad", window},
	"det_crop_mode":    {"crop_mode", window},
}

// isV0 reports whether net is in the V0 format: a "layers" block holding a
// "layer" message.
func isV0(net *prototxt.Message) bool {
	for _, f := range net.Get("layers") {
		if f.Kind == prototxt.KindMessage && len(f.Msg.Get("layer")) > 0 {
			return true
		}
	}
	return false
}

// upgradeV0 rewrites a V0 net into the V1 format in place. It returns
// whether there was anything to upgrade and notes on the fields it dropped.
func upgradeV0(net *prototxt.Message) (bool, []string, error) {
	if !isV0(net) {
		return false, nil, nil
	}
	type conn struct {
		f      *prototxt.Field // the layers field
		layer  *prototxt.Message
		typ    string
		bottom []*prototxt.Field
		top    []*prototxt.Field
	}
	var conns []*conn
	for _, f := range net.Get("layers") {
		if f.Kind != prototxt.KindMessage {
			return false, nil, &prototxt.Error{Pos: f.ValuePos, Msg: "layers in net is a message: write layers { ... }"}
		}
		c := &conn{f: f, bottom: f.Msg.Get("bottom"), top: f.Msg.Get("top")}
		ls := f.Msg.Get("layer")
		if len(ls) == 0 {
			return false, nil, &prototxt.Error{Pos: f.Pos, Msg: "a V0 'layers' block without its 'layer': the net mixes Caffe's V0 and V1 formats"}
		}
		for _, g := range f.Msg.Fields {
			if g.Name != "layer" && g.Name != "bottom" && g.Name != "top" {
				return false, nil, &prototxt.Error{Pos: g.Pos, Msg: fmt.Sprintf("unknown field '%s' in a V0 'layers' block (it holds layer, bottom and top)", g.Name)}
			}
		}
		switch {
		case len(ls) > 1:
			return false, nil, &prototxt.Error{Pos: ls[1].Pos, Msg: "a V0 'layers' block holds one 'layer'"}
		case ls[0].Kind != prototxt.KindMessage:
			return false, nil, &prototxt.Error{Pos: ls[0].ValuePos, Msg: "layer in a V0 'layers' block is a message: write layer { ... }"}
		}
		c.layer = ls[0].Msg
		if tf := c.layer.Get("type"); len(tf) > 0 {
			c.typ = tf[0].Value
			if _, ok := v0Types[c.typ]; !ok && c.typ != "padding" {
				return false, nil, &prototxt.Error{Pos: tf[0].ValuePos, Msg: fmt.Sprintf("unknown V0 layer type %q", c.typ)}
			}
		}
		conns = append(conns, c)
	}
	// UpgradeV0PaddingLayers: a padding layer's pad moves into the
	// convolution or pooling that reads it, which then reads its input.
	last := map[string]*conn{}
	var notes []string
	for _, c := range conns {
		for j, b := range c.bottom {
			src := last[b.Value]
			if src == nil || src.typ != "padding" {
				continue
			}
			if (c.typ != "conv" && c.typ != "pool") || len(c.bottom) != 1 || len(src.bottom) != 1 || len(src.top) != 1 {
				return false, nil, &prototxt.Error{Pos: b.Pos, Msg: fmt.Sprintf(
					"a V0 padding layer feeds %q, which Caffe's upgrade allows only for a one-input conv or pool layer", b.Value)}
			}
			nb := *src.bottom[0]
			nb.Pos, nb.ValuePos = b.Pos, b.ValuePos
			c.bottom[j] = &nb
			c.layer.Fields = slices.DeleteFunc(c.layer.Fields, func(g *prototxt.Field) bool { return g.Name == "pad" })
			c.layer.Fields = append(c.layer.Fields, src.layer.Get("pad")...)
		}
		for _, t := range c.top {
			last[t.Value] = c
		}
	}
	var out []*prototxt.Field
	i := 0
	for _, f := range net.Fields {
		if f.Name != "layers" {
			out = append(out, f)
			continue
		}
		if i >= len(conns) || conns[i].f != f {
			return false, nil, fmt.Errorf("config: internal error upgrading V0 layers")
		}
		c := conns[i]
		i++
		if c.typ == "padding" {
			continue
		}
		m, n := upgradeV0Layer(c.layer, c.typ, c.bottom, c.top)
		notes = append(notes, n...)
		nf := *f
		nf.Msg = m
		out = append(out, &nf)
	}
	net.Fields = out
	return true, notes, nil
}

// upgradeV0Layer returns the V1 layers message for one V0 layer.
func upgradeV0Layer(v0 *prototxt.Message, typ string, bottom, top []*prototxt.Field) (*prototxt.Message, []string) {
	m := &prototxt.Message{Pos: v0.Pos}
	m.Fields = append(m.Fields, v0.Get("name")...)
	if tf := v0.Get("type"); len(tf) > 0 {
		t := *tf[0]
		t.Kind, t.Value = prototxt.KindIdent, v0Types[typ]
		m.Fields = append(m.Fields, &t)
	}
	m.Fields = append(m.Fields, bottom...)
	m.Fields = append(m.Fields, top...)
	var notes []string
	params := map[string]*prototxt.Message{}
	var order []string
	for _, f := range v0.Fields {
		switch f.Name {
		case "name", "type":
			continue
		case "blobs", "blobs_lr", "weight_decay":
			m.Fields = append(m.Fields, f)
			continue
		case "hdf5_output_param":
			if typ == "hdf5_output" {
				m.Fields = append(m.Fields, f)
				continue
			}
		}
		spec, known := v0Fields[f.Name]
		msg := spec.msgs[typ]
		if msg == "" {
			msg = spec.msgs["*"]
		}
		if !known || msg == "" {
			notes = append(notes, fmt.Sprintf("%s: V0 field '%s' has no place in a %q layer; dropped, as Caffe's upgrade drops it", f.Pos, f.Name, typ))
			continue
		}
		pm := params[msg]
		if pm == nil {
			pm = &prototxt.Message{Pos: f.Pos}
			params[msg] = pm
			order = append(order, msg)
		}
		g := *f
		if spec.to != "" {
			g.Name = spec.to
		}
		pm.Fields = append(pm.Fields, &g)
	}
	for _, name := range order {
		pm := params[name]
		m.Fields = append(m.Fields, &prototxt.Field{Name: name, Pos: pm.Pos, ValuePos: pm.Pos, Kind: prototxt.KindMessage, Msg: pm})
	}
	return m, notes
}
