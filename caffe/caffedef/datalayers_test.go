package caffedef

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/layers"
)

func TestDataLayerSettings(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      DataLayer
	}{
		{"lmdb with rand_skip", `layer { name: "d" type: "Data" top: "data" top: "label"
  transform_param { force_gray: true } data_param { source: "db" batch_size: 4 backend: LMDB rand_skip: 9 } }`,
			DataLayer{Type: "Data", Source: "db", BatchSize: 4, DataSettings: DataSettings{Backend: "LMDB", RandSkip: 9, Channels: 1}}},
		{"default backend", `layer { name: "d" type: "Data" top: "data" data_param { source: "db" batch_size: 4 } }`,
			DataLayer{Type: "Data", Source: "db", BatchSize: 4, DataSettings: DataSettings{Backend: "LEVELDB"}}},
		{"image data", `layer { name: "d" type: "ImageData" top: "data" top: "label"
  transform_param { crop_size: 3 } image_data_param { source: "l.txt" batch_size: 2 root_folder: "r/" new_height: 8 new_width: 9 shuffle: true } }`,
			DataLayer{Type: "ImageData", Source: "l.txt", BatchSize: 2, DataSettings: DataSettings{Channels: 3, RootFolder: "r/", NewHeight: 8, NewWidth: 9, Shuffle: true}}},
		{"image data gray", `layer { name: "d" type: "ImageData" top: "data" image_data_param { source: "l.txt" batch_size: 2 is_color: false } }`,
			DataLayer{Type: "ImageData", Source: "l.txt", BatchSize: 2, DataSettings: DataSettings{Channels: 1}}},
		{"hdf5", `layer { name: "d" type: "HDF5Data" top: "data" top: "label" hdf5_data_param { source: "h.txt" batch_size: 5 } }`,
			DataLayer{Type: "HDF5Data", Source: "h.txt", BatchSize: 5}},
		{"window data", `layer { name: "d" type: "WindowData" top: "data" top: "label"
  transform_param { mirror: true crop_size: 227 } window_data_param { source: "w.txt" batch_size: 128
  fg_threshold: 0.6 bg_threshold: 0.4 fg_fraction: 0.3 context_pad: 16 crop_mode: "square" root_folder: "img/" scale: 0.5 } }`,
			DataLayer{Type: "WindowData", Source: "w.txt", BatchSize: 128, DataSettings: DataSettings{Window: &WindowSettings{
				FgThreshold: 0.6, BgThreshold: 0.4, FgFraction: 0.3, ContextPad: 16, CropMode: "square", RootFolder: "img/", Scale: 0.5}}}},
		{"window data defaults", `layer { name: "d" type: "WindowData" top: "data" window_data_param { source: "w.txt" batch_size: 2 } }`,
			DataLayer{Type: "WindowData", Source: "w.txt", BatchSize: 2, DataSettings: DataSettings{Window: &WindowSettings{
				FgThreshold: 0.5, BgThreshold: 0.5, FgFraction: 0.25, CropMode: "warp", Scale: 1}}}},
		{"dummy", `layer { name: "d" type: "DummyData" top: "a" top: "b" dummy_data_param { shape { dim: 2 dim: 3 } data_filler { type: "gaussian" std: 2 } } }`,
			DataLayer{Type: "DummyData", Shapes: [][]int{{2, 3}, {2, 3}}, DataSettings: DataSettings{Fillers: []Filler{{Type: "gaussian", Max: 1, Std: 2}, {Type: "gaussian", Max: 1, Std: 2}}}}},
		{"dummy legacy", `layer { name: "d" type: "DummyData" top: "a" dummy_data_param { num: 2 channels: 1 height: 3 width: 4 } }`,
			DataLayer{Type: "DummyData", Shapes: [][]int{{2, 1, 3, 4}}, DataSettings: DataSettings{Fillers: []Filler{{Type: "constant", Max: 1, Std: 1}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := ParseNet("f.prototxt", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			got := *n.Layers[0].Data
			got.Name, got.Tops, got.Pos, got.Transform = "", nil, "", c.want.Transform
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestDataLayerErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"window data without param", `layer { name: "w" type: "WindowData" top: "data" }`, "f.prototxt:1:1: WindowData layer 'w' needs window_data_param { source batch_size }"},
		{"window data crop mode", `layer { name: "w" type: "WindowData" top: "data" window_data_param { source: "w.txt" batch_size: 1 crop_mode: "fit" } }`,
			`crop_mode "fit" is neither "warp" nor "square"`},
		{"window data old crop", `layer { name: "w" type: "WindowData" top: "data" window_data_param { source: "w.txt" batch_size: 1 crop_size: 5 } }`,
			"unsupported field 'crop_size' in window_data_param of layer 'w': Caffe's WindowData reads it from transform_param"},
		{"one of new_height", `layer { name: "d" type: "ImageData" top: "data" image_data_param { source: "l" batch_size: 1 new_height: 3 } }`,
			"sets only one of new_height and new_width"},
		{"dummy shapes", `layer { name: "d" type: "DummyData" top: "a" top: "b" top: "c" dummy_data_param { shape { dim: 1 } shape { dim: 2 } } }`,
			"has 2 shapes for 3 tops"},
		{"dummy filler", `layer { name: "d" type: "DummyData" top: "a" dummy_data_param { shape { dim: 1 } data_filler { type: "xavier" } } }`,
			"filler type 'xavier' in DummyData"},
		{"both force", `layer { name: "d" type: "Data" top: "a" transform_param { force_color: true force_gray: true } data_param { source: "x" batch_size: 1 } }`,
			"sets both force_color and force_gray"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNet("f.prototxt", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// TestMemoryData: a MemoryData layer (Caffe's application fills it) reads
// as an Input layer of its memory_data_param's shapes, with a warning, so
// that dsgd time and dsgd test run its net; a missing size is refused.
func TestMemoryData(t *testing.T) {
	n, err := ParseNet("f.prototxt", []byte(`layer { name: "m" type: "MemoryData" top: "data" top: "label"
  memory_data_param { batch_size: 4 channels: 3 height: 5 width: 6 } transform_param { scale: 0.5 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" }`))
	if err != nil {
		t.Fatal(err)
	}
	pn, err := n.Phase(layers.Train)
	if err != nil {
		t.Fatal(err)
	}
	dl := pn.Data[0]
	if dl.Type != "Input" || len(dl.Shapes) != 2 || !slices.Equal(dl.Shapes[0], []int{4, 3, 5, 6}) || !slices.Equal(dl.Shapes[1], []int{4}) {
		t.Fatalf("%+v", dl)
	}
	if len(n.Warnings) != 2 || !strings.Contains(strings.Join(n.Warnings, "\n"), "MemoryData layer 'm' is filled by Caffe's application") {
		t.Errorf("warnings %q", n.Warnings)
	}
	_, err = ParseNet("f.prototxt", []byte(`layer { name: "m" type: "MemoryData" top: "data" memory_data_param { batch_size: 4 channels: 3 height: 5 } }`))
	if err == nil || !strings.Contains(err.Error(), "memory_data_param of layer 'm' needs width") {
		t.Errorf("err %v", err)
	}
}

// TestDataLayerSourceErr checks that a data layer without a source reads,
// as in Caffe (DIGITS leaves the source to the tool), and that SourceErr
// says so with the layer's name and the position of its parameters.
func TestDataLayerSourceErr(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"data", `layer { name: "d" type: "Data" top: "data" data_param { source: "db" batch_size: 1 } }`, ""},
		{"data no source", `layer { name: "d" type: "Data" top: "data" data_param { batch_size: 1 } }`,
			"f.prototxt:1:55: data_param of layer 'd' needs a source"},
		{"data empty source", `layer { name: "d" type: "Data" top: "data" data_param { source: "" batch_size: 1 } }`,
			"f.prototxt:1:55: data_param of layer 'd' needs a source"},
		{"image data", `layer { name: "d" type: "ImageData" top: "data" image_data_param { batch_size: 1 } }`,
			"f.prototxt:1:66: image_data_param of layer 'd' needs a source"},
		{"hdf5", `layer { name: "h" type: "HDF5Data" top: "data" hdf5_data_param { source: "" batch_size: 1 } }`,
			"f.prototxt:1:64: hdf5_data_param of layer 'h' needs a source"},
		{"window", `layer { name: "w" type: "WindowData" top: "data" top: "label" window_data_param { batch_size: 1 } }`,
			"f.prototxt:1:81: window_data_param of layer 'w' needs a source"},
		{"dummy", `layer { name: "d" type: "DummyData" top: "a" dummy_data_param { shape { dim: 1 } } }`, ""},
		{"input", `layer { name: "d" type: "Input" top: "a" input_param { shape { dim: 1 } } }`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := ParseNet("f.prototxt", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			err = n.Layers[0].Data.SourceErr()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("SourceErr: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Fatalf("SourceErr: %v, want %q", err, c.want)
			}
			pn, err := n.Phase(layers.Train)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := pn.Data[0].SourceErr() != nil, c.want != ""; got != want {
				t.Errorf("the TRAIN phase's copy: SourceErr set %v, want %v", got, want)
			}
		})
	}
}
