package caffedef

// forkLayer says where a layer type that BVLC Caffe does not have comes
// from, and how the same computation is written with BVLC's layers where
// it can be.
type forkLayer struct {
	// fork names the Caffe fork (and the nets) that define the type.
	fork string
	// instead, if not "", says how BVLC's layers compute the same.
	instead string
}

// forkLayers are the layer types of published nets' Caffe forks (the
// model zoo's detection and segmentation files) that dsgd does not run, so
// that an error says the type is a fork's, not a misspelling, and what to
// use instead. BVLC Caffe refuses them too ("Unknown layer type"). The
// fork layers dsgd runs are forkTypes (layers_fork.go).
var forkLayers = map[string]forkLayer{
	"ImageLabelmapData": {fork: "HED's, s9xie/hed", instead: "write images and label maps to two LMDBs or to HDF5 files and read them with Data or HDF5Data layers"},
}

// forkNote is what the error for an unknown layer type adds when the type
// is a fork's (forkLayers): where it comes from and what to use instead.
func forkNote(typ string) string {
	fl, ok := forkLayers[typ]
	if !ok {
		return ""
	}
	s := ", a layer of a Caffe fork (" + fl.fork + "), not of BVLC Caffe"
	if fl.instead != "" {
		s += ": " + fl.instead
	}
	return s
}

// forkFields are fields that Caffe forks added to BVLC's messages (SSD's
// data augmentation in transform_param, which caffenet-benchmark's nets
// use), so that the error for one says it is a fork's and what to do.
// SSD's AnnotatedData layer reads them (annotated.go); other data layers
// refuse them.
var forkFields = map[string]forkLayer{
	"resize_param":    {fork: "SSD's, weiliu89/caffe", instead: "resize the images when writing the LMDB (dsgd convert-imageset --resize_height H --resize_width W) and remove it (dsgd honours it only in SSD's AnnotatedData layer)"},
	"noise_param":     {fork: "SSD's, weiliu89/caffe"},
	"distort_param":   {fork: "SSD's, weiliu89/caffe", instead: "remove it (dsgd honours it only in SSD's AnnotatedData layer)"},
	"expand_param":    {fork: "SSD's, weiliu89/caffe", instead: "remove it (dsgd honours it only in SSD's AnnotatedData layer)"},
	"emit_constraint": {fork: "SSD's, weiliu89/caffe", instead: "remove it (dsgd honours it only in SSD's AnnotatedData layer)"},
}

// forkFieldNote is what the error for an unknown field adds when the field
// is a fork's (forkFields).
func forkFieldNote(name string) string {
	fl, ok := forkFields[name]
	if !ok {
		return ""
	}
	s := "a field of a Caffe fork (" + fl.fork + "), not of BVLC Caffe's caffe.proto, so it cannot be honoured; "
	if fl.instead != "" {
		return s + fl.instead
	}
	return s + "remove it"
}
