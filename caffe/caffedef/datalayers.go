package caffedef

import (
	"fmt"
	"math"

	"dsgd/caffe/prototxt"
	"dsgd/data"
)

// DataSettings are the settings of Caffe's data layers beyond source,
// batch size and transform.
type DataSettings struct {
	// Backend is data_param.backend of a Data layer: "LEVELDB" (Caffe's
	// default) or "LMDB".
	Backend string
	// RandSkip is data_param.rand_skip (or image_data_param.rand_skip):
	// start at a random record below it.
	RandSkip int
	// Channels is what encoded images decode to: 3 (force_color, or
	// ImageData's is_color, its default), 1 (force_gray, is_color:
	// false), or 0, each image's own.
	Channels int
	// RootFolder is image_data_param.root_folder, prefixed to each path
	// of an ImageData list file.
	RootFolder string
	// NewHeight and NewWidth resize ImageData images when both are set.
	NewHeight, NewWidth int
	// Shuffle is image_data_param.shuffle or hdf5_data_param.shuffle.
	Shuffle bool
	// Fillers holds a DummyData layer's data_filler, one per top (a single
	// one is repeated, none means constant 0).
	Fillers []Filler
	// Window holds a WindowData layer's window_data_param beyond source
	// and batch size (data.OpenWindows reads its R-CNN window file).
	Window *WindowSettings
	// Annotated holds an AnnotatedData layer's (SSD's fork) transform and
	// samplers: every field of data.AnnotatedConfig but the source,
	// backend, batch, phase, rank and seed, which the opener fills.
	Annotated *data.AnnotatedConfig
	// LabelMapFile is annotated_data_param.label_map_file, which the fork
	// keeps and does not read in the layer.
	LabelMapFile string
}

// WindowSettings are the fields of Caffe's WindowDataParameter that
// choose and crop the windows.
type WindowSettings struct {
	FgThreshold, BgThreshold, FgFraction float32
	ContextPad                           int
	CropMode                             string // "warp" or "square"
	CacheImages                          bool
	RootFolder                           string
	// Scale is window_data_param.scale: Caffe 1.0's WindowData multiplies
	// pixels by it and ignores transform_param.scale.
	Scale float32
}

// Filler is a Caffe FillerParameter as DummyData uses it.
type Filler struct {
	// Type is "constant", "uniform" or "gaussian".
	Type                       string
	Value, Min, Max, Mean, Std float32
}

// decodeFileData decodes an ImageData or HDF5Data layer.
func decodeFileData(r *reader, l *LayerDef, dl *DataLayer) {
	switch {
	case l.Type == "HDF5Data" && len(l.Top) < 1:
		r.d.failf(l.Pos, "HDF5Data layer '%s' has no top; each top reads the dataset of its name", l.Name)
		return
	case l.Type != "HDF5Data" && (len(l.Top) < 1 || len(l.Top) > 2):
		r.d.failf(l.Pos, "%s layer '%s' has %d tops; it needs 1 or 2 (data, label)", l.Type, l.Name, len(l.Top))
		return
	}
	pname := "image_data_param"
	if l.Type == "WindowData" {
		pname = "window_data_param"
		dl.Transform = decodeTransform(r, dl)
	} else if l.Type == "HDF5Data" {
		pname = "hdf5_data_param"
		r.ignore("transform_param", "Caffe's HDF5Data layer applies no transformation (it reads the data ready to use) and ignores it")
	} else {
		dl.Transform = decodeTransform(r, dl)
	}
	m := r.msg(pname)
	if m == nil {
		if r.ok() {
			r.d.failf(l.Pos, "%s layer '%s' needs %s { source batch_size }", l.Type, l.Name, pname)
		}
		return
	}
	pr := r.d.reader(m, pname+" of "+r.ctx)
	dl.Source = pr.str("source", "")
	dl.BatchSize = pr.int("batch_size", 0, 1, math.MaxInt32)
	dl.Shuffle = pr.bool("shuffle", false)
	if l.Type == "ImageData" {
		dl.RandSkip = pr.int("rand_skip", 0, 0, math.MaxInt32)
		dl.NewHeight = pr.int("new_height", 0, 0, math.MaxInt32)
		dl.NewWidth = pr.int("new_width", 0, 0, math.MaxInt32)
		if (dl.NewHeight == 0) != (dl.NewWidth == 0) && pr.ok() {
			r.d.failf(m.Pos, "%s sets only one of new_height and new_width; Caffe needs both or neither", pr.ctx)
		}
		if pr.bool("is_color", true) {
			if dl.Channels == 0 {
				dl.Channels = 3
			}
		} else {
			dl.Channels = 1
		}
		dl.RootFolder = pr.str("root_folder", "")
		const old = "use transform_param in the layer instead"
		for _, name := range []string{"scale", "mean_file", "crop_size", "mirror"} {
			pr.unsupported(name, old)
		}
	}
	if l.Type == "WindowData" {
		w := &WindowSettings{
			FgThreshold: pr.float32("fg_threshold", 0.5),
			BgThreshold: pr.float32("bg_threshold", 0.5),
			FgFraction:  pr.float32("fg_fraction", 0.25),
			ContextPad:  pr.int("context_pad", 0, 0, math.MaxInt32),
			CropMode:    pr.str("crop_mode", "warp"),
			CacheImages: pr.bool("cache_images", false),
			RootFolder:  pr.str("root_folder", ""),
			Scale:       pr.float32("scale", 1),
		}
		if w.CropMode != "warp" && w.CropMode != "square" && pr.ok() {
			r.d.failf(m.Pos, "%s: crop_mode %q is neither \"warp\" nor \"square\"", pr.ctx, w.CropMode)
		}
		dl.Window = w
		const old = "Caffe's WindowData reads it from transform_param; move it there"
		for _, name := range []string{"mean_file", "crop_size", "mirror"} {
			pr.unsupported(name, old)
		}
	}
	if pr.ok() {
		if dl.BatchSize == 0 {
			r.d.failf(m.Pos, "%s needs a batch_size", pr.ctx)
		}
		dl.noSource = missingSource(dl, m.Pos, pr.ctx)
	}
	pr.finish()
}

// decodeDummyData decodes a DummyData layer: a shape and a filler per top.
func decodeDummyData(r *reader, l *LayerDef, dl *DataLayer) {
	if len(l.Top) == 0 {
		r.d.failf(l.Pos, "DummyData layer '%s' has no top", l.Name)
		return
	}
	m := r.msg("dummy_data_param")
	if m == nil {
		if r.ok() {
			r.d.failf(l.Pos, "DummyData layer '%s' needs dummy_data_param { shape { dim ... } }", l.Name)
		}
		return
	}
	pr := r.d.reader(m, "dummy_data_param of "+r.ctx)
	for _, s := range pr.msgs("shape") {
		dl.Shapes = append(dl.Shapes, decodeShape(r.d, s, "shape in "+pr.ctx))
	}
	legacy := [4][]int{pr.ints("num", 1, math.MaxInt32), pr.ints("channels", 1, math.MaxInt32), pr.ints("height", 1, math.MaxInt32), pr.ints("width", 1, math.MaxInt32)}
	if len(legacy[0])+len(legacy[1])+len(legacy[2])+len(legacy[3]) > 0 {
		if len(dl.Shapes) > 0 && pr.ok() {
			r.d.failf(m.Pos, "%s gives both shape and num/channels/height/width", pr.ctx)
		}
		// As Caffe's DummyDataLayer: each of num, channels, height and
		// width has one entry, standing for every top, or one per top.
		for j, name := range []string{"num", "channels", "height", "width"} {
			if n := len(legacy[j]); n != 1 && n != len(l.Top) {
				r.d.failf(m.Pos, "%s: %s has %d entries for %d tops; give one, or one per top", pr.ctx, name, n, len(l.Top))
				return
			}
		}
		for i := range l.Top {
			sh := make([]int, 4)
			for j := range sh {
				sh[j] = legacy[j][min(i, len(legacy[j])-1)]
			}
			dl.Shapes = append(dl.Shapes, sh)
		}
	}
	for _, f := range pr.msgs("data_filler") {
		dl.Fillers = append(dl.Fillers, decodeDummyFiller(r.d, f, "data_filler in "+pr.ctx))
	}
	pr.finish()
	if !r.ok() {
		return
	}
	switch {
	case len(dl.Shapes) == 1:
		for len(dl.Shapes) < len(l.Top) {
			dl.Shapes = append(dl.Shapes, dl.Shapes[0])
		}
	case len(dl.Shapes) != len(l.Top):
		r.d.failf(m.Pos, "%s has %d shapes for %d tops; give one shape, or one per top", pr.ctx, len(dl.Shapes), len(l.Top))
		return
	}
	switch {
	case len(dl.Fillers) == 0:
		dl.Fillers = []Filler{{Type: "constant", Max: 1, Std: 1}} // Caffe's FillerParameter defaults
		fallthrough
	case len(dl.Fillers) == 1:
		for len(dl.Fillers) < len(l.Top) {
			dl.Fillers = append(dl.Fillers, dl.Fillers[0])
		}
	case len(dl.Fillers) != len(l.Top):
		r.d.failf(m.Pos, "%s has %d data_filler for %d tops; give one, or one per top", pr.ctx, len(dl.Fillers), len(l.Top))
	}
}

func decodeDummyFiller(d *decoder, m *prototxt.Message, ctx string) Filler {
	fr := d.reader(m, ctx)
	f := Filler{
		Type:  fr.str("type", "constant"),
		Value: fr.float32("value", 0),
		Min:   fr.float32("min", 0),
		Max:   fr.float32("max", 1),
		Mean:  fr.float32("mean", 0),
		Std:   fr.float32("std", 1),
	}
	switch f.Type {
	case "constant", "uniform", "gaussian":
	default:
		if fr.ok() {
			d.failf(m.Pos, "%s: filler type '%s' in DummyData: dsgd fills dummy data with constant, uniform or gaussian", ctx, f.Type)
		}
	}
	fr.finish()
	return f
}

// decodeMemoryData decodes a MemoryData layer: blobs that Caffe's
// application fills through its C++ or Python API (batch_size x channels x
// height x width, and batch_size labels). dsgd has no such API: the layer
// becomes an Input layer of those shapes, left at zero as caffe time and
// dsgd time leave an Input's blobs, with a warning saying so.
func decodeMemoryData(r *reader, l *LayerDef, dl *DataLayer) {
	if len(l.Top) < 1 || len(l.Top) > 2 {
		r.d.failf(l.Pos, "MemoryData layer '%s' has %d tops; it needs 1 or 2 (data, label)", l.Name, len(l.Top))
		return
	}
	m := r.msg("memory_data_param")
	if m == nil {
		if r.ok() {
			r.d.failf(l.Pos, "MemoryData layer '%s' needs memory_data_param { batch_size channels height width }", l.Name)
		}
		return
	}
	pr := r.d.reader(m, "memory_data_param of "+r.ctx)
	b := pr.int("batch_size", 0, 1, maxI32)
	c := pr.int("channels", 0, 1, maxI32)
	h := pr.int("height", 0, 1, maxI32)
	w := pr.int("width", 0, 1, maxI32)
	for _, name := range []string{"batch_size", "channels", "height", "width"} {
		if !pr.has(name) && pr.ok() {
			pr.d.failf(m.Pos, "%s needs %s", pr.ctx, name)
		}
	}
	pr.finish()
	r.ignore("transform_param", "the layer's blobs stay at zero in dsgd")
	if !r.ok() {
		return
	}
	dl.Type = "Input"
	dl.Shapes = [][]int{{b, c, h, w}}
	if len(l.Top) == 2 {
		dl.Shapes = append(dl.Shapes, []int{b})
	}
	r.d.warnings = append(r.d.warnings, warning{l.Pos, fmt.Sprintf("%s: MemoryData layer '%s' is filled by Caffe's application through its API, which dsgd has not: its blobs (%dx%dx%dx%d) stay at zero, as an Input layer's", l.Pos, l.Name, b, c, h, w)})
}
