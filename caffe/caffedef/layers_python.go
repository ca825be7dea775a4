package caffedef

import (
	"dsgd/engine/layers"
	"dsgd/engine/pylayer"
)

// decodePython decodes a Python layer's python_param: module and layer
// (the class), which Caffe needs to build it; param_str, the string the
// class reads as self.param_str; and share_in_parallel, which Caffe marks
// DEPRECATED and ignores, read and ignored here too (pylayer.Config). A
// missing module or layer is refused when the layer is built (Caffe fails
// then too, importing ""), so a net whose rules leave the layer out still
// builds.
func decodePython(l *LayerDef, param func(string) *reader) layers.Config {
	p := param("python_param")
	c := &pylayer.Config{
		Module:          p.str("module", ""),
		Layer:           p.str("layer", ""),
		ParamStr:        p.str("param_str", ""),
		ShareInParallel: p.bool("share_in_parallel", false),
		Name:            l.Name,
	}
	p.finish()
	return c
}
