//go:build !purego

package data

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/tensor"
)

// TestHDF5OutputLayer ports Caffe's HDF5OutputLayerTest.TestForward: blobs
// read from an HDF5 file go through an HDF5Output layer (writing with
// WriteHDF5) and are read back equal, as Caffe's four legacy axes.
func TestHDF5OutputLayer(t *testing.T) {
	t.Run("HDF5OutputLayerTest.TestForward", func(t *testing.T) {
		vals, dims, err := readH5File(filepath.Join("testdata", "caffe", "train.h5"), []string{"data", "label"})
		if err != nil {
			t.Fatal(err)
		}
		data, label := tensor.NewBlob("data", dims[0]...), tensor.NewBlob("label", dims[1]...)
		copy(data.Data, vals[0])
		copy(label.Data, vals[1])
		out := filepath.Join(t.TempDir(), "out.h5")
		l, err := (&layers.HDF5OutputConfig{FileName: out, Write: WriteHDF5}).Build(layers.Context{})
		if err != nil {
			t.Fatal(err)
		}
		bottom := []*tensor.Blob{data, label}
		if err := l.Setup(bottom, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(out); err != nil {
			t.Fatalf("Setup did not create the file (Caffe creates it at set-up): %v", err)
		}
		if err := l.Reshape(bottom, nil); err != nil {
			t.Fatal(err)
		}
		for pass := range 2 {
			if pass == 1 {
				// A second Forward replaces the batch.
				for i := range data.Data {
					data.Data[i] = -data.Data[i]
				}
				label.Data[0] = 99
			}
			l.Forward(bottom, nil)
			got, gotDims, err := readH5File(out, []string{"data", "label"})
			if err != nil {
				t.Fatal(err)
			}
			n := dims[0][0]
			if !slices.Equal(gotDims[0], []int{n, 1, 12, 12}) || !slices.Equal(gotDims[1], []int{n, 1, 1, 1}) {
				t.Fatalf("pass %d: datasets of shapes %v, want [%d 1 12 12] and Caffe's legacy [%d 1 1 1]", pass, gotDims, n, n)
			}
			if !slices.Equal(got[0], data.Data) || !slices.Equal(got[1], label.Data) {
				t.Fatalf("pass %d: read back values differ", pass)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, err := (&layers.HDF5OutputConfig{FileName: "x.h5"}).Build(layers.Context{}); err == nil {
			t.Error("no writer: no error")
		}
		l, _ := (&layers.HDF5OutputConfig{FileName: filepath.Join(t.TempDir(), "o.h5"), Write: WriteHDF5}).Build(layers.Context{})
		if err := l.Setup([]*tensor.Blob{tensor.NewBlob("a", 2, 3), tensor.NewBlob("b", 3)}, nil); err == nil {
			t.Error("data of 2 items, label of 3: no error")
		}
		if err := l.Setup([]*tensor.Blob{tensor.NewBlob("a", 2, 3)}, nil); err == nil {
			t.Error("one bottom: no error")
		}
		l, _ = (&layers.HDF5OutputConfig{FileName: filepath.Join(t.TempDir(), "no", "such", "dir.h5"), Write: WriteHDF5}).Build(layers.Context{})
		if err := l.Setup([]*tensor.Blob{tensor.NewBlob("a", 2, 3), tensor.NewBlob("b", 2)}, nil); err == nil {
			t.Error("a file in a missing directory: no error")
		}
	})
}
