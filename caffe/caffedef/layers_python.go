package caffedef

import (
	"dsgd/engine/layers"
	"dsgd/engine/pylayer"
)

// decodePython decodes a Python layer's python_param: module and layer
// (the class), which Caffe needs to build it; param_str, the string the
// class reads as self.param_str; and share_in_parallel, which Caffe marks
// DEPRECATED and ignores, read and ignored here too (pylayer.Config).
func decodePython(l *LayerDef, param func(string) *reader) layers.Config {
	p := param("python_param")
	c := &pylayer.Config{
		Module:          p.str("module", ""),
		Layer:           p.str("layer", ""),
		ParamStr:        p.str("param_str", ""),
		ShareInParallel: p.bool("share_in_parallel", false),
		Name:            l.Name,
	}
	for _, need := range []string{"module", "layer"} {
		if !p.has(need) && p.ok() {
			p.d.failf(p.m.Pos, "%s needs %s (the Python module to import and the caffe.Layer class in it)", p.ctx, need)
		}
	}
	p.finish()
	return c
}
