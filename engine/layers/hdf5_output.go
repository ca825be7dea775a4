package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// HDF5Writer writes an HDF5 file of float32 datasets, replacing the file:
// dataset i is named names[i], has dimensions shapes[i] and holds vals[i]
// row-major. The package that owns libhdf5 (data.WriteHDF5) provides it,
// so this package needs no C library.
type HDF5Writer func(path string, names []string, shapes [][]int, vals [][]float32) error

// HDF5OutputConfig is Caffe's HDF5OutputParameter, with the writer the
// layer writes through.
type HDF5OutputConfig struct {
	FileName string
	// Write writes the file; nil refuses to build (a dsgd without libhdf5
	// passes nil, or a writer that refuses).
	Write HDF5Writer
}

// Type returns "HDF5Output".
func (*HDF5OutputConfig) Type() string { return "HDF5Output" }

// Build returns an HDF5Output layer: two bottoms with the same number of
// items, no top. Setup creates FileName, truncated, with no datasets;
// each Forward writes the file afresh with two float datasets, "data"
// holding bottom[0] and "label" bottom[1], each with Caffe's four legacy
// axes (num, channels, height, width: missing axes are 1, and a bottom
// may have at most four). Caffe writes the datasets into the file it
// opened at set-up and aborts on a second Forward (the datasets exist);
// here the file holds the last Forward's batch, which for the one Forward
// Caffe allows is the same file. Forward panics when the write fails, as
// Caffe's CHECK aborts. The bottoms take no gradient.
func (c *HDF5OutputConfig) Build(Context) (Layer, error) {
	if c.FileName == "" {
		return nil, fmt.Errorf("layers: HDF5Output: file_name is empty")
	}
	if c.Write == nil {
		return nil, fmt.Errorf("layers: HDF5Output: no HDF5 writer for %s (this dsgd cannot write HDF5 files)", c.FileName)
	}
	return &hdf5OutputLayer{cfg: *c, names: []string{"data", "label"}}, nil
}

type hdf5OutputLayer struct {
	cfg    HDF5OutputConfig
	names  []string
	shapes [][]int
	vals   [][]float32
}

func (*hdf5OutputLayer) Type() string    { return "HDF5Output" }
func (*hdf5OutputLayer) Params() []Param { return nil }

// AllowBackward implements GradientBlocker: the written blobs take no
// gradient.
func (*hdf5OutputLayer) AllowBackward(int) bool { return false }

func (l *hdf5OutputLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("HDF5Output", bottom, top, 2, 2, 0, 0); err != nil {
		return err
	}
	if err := l.Reshape(bottom, top); err != nil {
		return err
	}
	if err := l.cfg.Write(l.cfg.FileName, nil, nil, nil); err != nil {
		return fmt.Errorf("layers: HDF5Output: %w", err)
	}
	return nil
}

func (l *hdf5OutputLayer) Reshape(bottom, _ []*tensor.Blob) error {
	l.shapes = l.shapes[:0]
	for _, b := range bottom {
		if len(b.Shape) > 4 {
			return fmt.Errorf("layers: HDF5Output: bottom %q has %d axes; Caffe writes at most 4", b.Name, len(b.Shape))
		}
		l.shapes = append(l.shapes, []int{b.Dim(0), b.Dim(1), b.Dim(2), b.Dim(3)})
	}
	if bottom[0].Num() != bottom[1].Num() {
		return fmt.Errorf("layers: HDF5Output: data %q has %d items but label %q has %d; they must have the same batch size",
			bottom[0].Name, bottom[0].Num(), bottom[1].Name, bottom[1].Num())
	}
	l.vals = append(l.vals[:0], nil, nil)
	return nil
}

func (l *hdf5OutputLayer) Forward(bottom, _ []*tensor.Blob) {
	for i, b := range bottom {
		l.vals[i] = b.Data[:b.Count()]
	}
	if err := l.cfg.Write(l.cfg.FileName, l.names, l.shapes, l.vals); err != nil {
		panic(fmt.Sprintf("layers: HDF5Output: %v", err))
	}
	l.vals[0], l.vals[1] = nil, nil
}

func (*hdf5OutputLayer) Backward(_ []*tensor.Blob, _ []bool, _ []*tensor.Blob) {}
