//go:build !purego

package data

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCaffeHDF5DataRead ports Caffe's HDF5DataLayerTest.TestRead on the
// two files of Caffe's test data, rewritten by h5py
// (scripts/caffe_hdf5_fixture.py): three tops from a source list of two
// files, the second gzip-compressed with uint8 labels, read in file order
// at batch 5 through ten batches (both files, twice). Caffe's TestSkip is
// not ported: Caffe's solvers take every solver_count-th row, dsgd's
// workers each take a slice of the global batch, so that an iteration's
// rows do not depend on the worker count.
func TestCaffeHDF5DataRead(t *testing.T) {
	t.Run("HDF5DataLayerTest.TestRead", func(t *testing.T) {
		dir, err := filepath.Abs("testdata/caffe/hdf5")
		if err != nil {
			t.Fatal(err)
		}
		list := filepath.Join(t.TempDir(), "sample_data_list.txt")
		text := filepath.Join(dir, "sample_data.h5") + "\n" + filepath.Join(dir, "sample_data_2_gzip.h5") + "\n"
		if err := os.WriteFile(list, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := ReadHDF5Tops(list, []string{"data", "label", "label2"})
		if err != nil {
			t.Fatal(err)
		}
		const batch, cols, h, w = 5, 8, 6, 5
		if ds.N != 20 || ds.C != cols || ds.H != h || ds.W != w {
			t.Fatalf("%d items of %dx%dx%d, want 20 of %dx%dx%d", ds.N, ds.C, ds.H, ds.W, cols, h, w)
		}
		if len(ds.Extra) != 2 || !slices.Equal(ds.Extra[0].Item, []int{1}) || !slices.Equal(ds.Extra[1].Item, []int{1}) {
			t.Fatalf("label tops %+v, want two of items [1] (Caffe's top shape (5, 1))", ds.Extra)
		}
		l, err := NewLoader(ds, LoaderConfig{BatchSize: batch})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		const size = cols * h * w
		for iter := range 10 {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			labelOff := 1
			dataOff := 0
			if iter%2 == 1 {
				labelOff, dataOff = 1+batch, batch*size
			}
			fileOff := 0
			if iter%4 >= 2 {
				fileOff = 2400
			}
			for i := range batch {
				if got := b.Extra[0][i]; got != float32(labelOff+i) {
					t.Fatalf("iter %d: label[%d] = %v, want %d", iter, i, got, labelOff+i)
				}
				if got := b.Extra[1][i]; got != float32(labelOff+1+i) {
					t.Fatalf("iter %d: label2[%d] = %v, want %d", iter, i, got, labelOff+1+i)
				}
			}
			for idx := range batch * size {
				if got, want := b.Data[idx], float32(fileOff+dataOff+idx); got != want {
					t.Fatalf("iter %d: data[%d] = %v, want %v", iter, idx, got, want)
				}
			}
			l.Release(b)
		}
	})
}
