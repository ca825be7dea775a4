package caffemodel

import (
	"fmt"

	"dsgd/engine/model"
)

// LayerInfo describes one layer of a net for Resolve: what a .caffemodel
// records of it besides its blobs.
type LayerInfo struct {
	Name, Type  string
	Bottom, Top []string
	// Params are the layer's param { } specs as the net file gives them
	// (name, lr_mult, decay_mult); a param blob beyond them is unnamed.
	Params []model.ParamSpec
}

// SpecLayers lists the layers of a phase's net for Resolve, in order.
func SpecLayers(spec model.Spec) []LayerInfo {
	out := make([]LayerInfo, 0, len(spec.Layers))
	for _, l := range spec.Layers {
		typ := ""
		if l.Config != nil {
			typ = l.Config.Type()
		}
		out = append(out, LayerInfo{Name: l.Name, Type: typ, Bottom: l.Bottom, Top: l.Top, Params: l.Params})
	}
	return out
}

// NetLayer is one layer of a built net with its param blobs, as Caffe's
// Net holds it: a layer that shares a param by name (param { name: "w" }
// in two layers, as siamese nets do) has that blob too, pointing at the
// block of the layer that first named it.
type NetLayer struct {
	LayerInfo
	// Blocks holds the layer's param blobs in order: the block (of the
	// net's flat parameters) each one reads.
	Blocks []model.Block
	// Owner[j] is false where blob j is shared with an earlier layer,
	// which owns it (Caffe's param_owners_ ≠ -1).
	Owner []bool
}

// Resolve pairs each layer with its param blobs in blocks (a net's
// Blocks: one per owned blob, named "LAYER/j" or by the shared param
// name). It fails when the two disagree: layers of another net.
func Resolve(layers []LayerInfo, blocks []model.Block) ([]NetLayer, error) {
	byName := make(map[string]int, len(blocks))
	for i, b := range blocks {
		byName[b.Name] = i
	}
	used := make([]bool, len(blocks))
	out := make([]NetLayer, 0, len(layers))
	for _, li := range layers {
		nl := NetLayer{LayerInfo: li}
		for j := 0; ; j++ {
			name := fmt.Sprintf("%s/%d", li.Name, j)
			if j < len(li.Params) && li.Params[j].Name != "" {
				name = li.Params[j].Name
			}
			bi, ok := byName[name]
			if !ok {
				if j < len(li.Params) {
					return nil, fmt.Errorf("caffemodel: layer %q param %d (%s) has no parameter block in the net", li.Name, j, name)
				}
				break
			}
			nl.Blocks = append(nl.Blocks, blocks[bi])
			nl.Owner = append(nl.Owner, !used[bi])
			used[bi] = true
		}
		out = append(out, nl)
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("caffemodel: parameter block %s of layer %q belongs to no layer of the net", blocks[i].Name, blocks[i].Layer)
		}
	}
	return out, nil
}

// blockLayers makes NetLayers from blocks alone, one per owning layer in
// order of first appearance: for callers that know no layer list (no
// shared params are seen then).
func blockLayers(blocks []model.Block) []NetLayer {
	var out []NetLayer
	at := map[string]int{}
	for _, b := range blocks {
		i, ok := at[b.Layer]
		if !ok {
			i = len(out)
			at[b.Layer] = i
			out = append(out, NetLayer{LayerInfo: LayerInfo{Name: b.Layer}})
		}
		out[i].Blocks = append(out[i].Blocks, b)
		out[i].Owner = append(out[i].Owner, true)
	}
	return out
}
