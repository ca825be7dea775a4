//go:build !purego

package data

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// h5List writes a source list naming the fixture file name (made by h5py:
// scripts/hdf5_tops_fixture.py) and returns its path.
func h5List(t *testing.T, name string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata/hdf5tops", name))
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(t.TempDir(), "list.txt")
	if err := os.WriteFile(list, []byte(abs+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return list
}

// TestHDF5Tops checks Caffe's HDF5Data with any number of tops of any rank
// and float values against the values h5py wrote.
func TestHDF5Tops(t *testing.T) {
	list := h5List(t, "seq.h5")
	ds, err := ReadHDF5Tops(list, []string{"data", "target", "cont"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.Check(); err != nil {
		t.Fatal(err)
	}
	if ds.N != 12 || !slices.Equal(ds.DataItem, []int{3, 4}) || ds.C != 12 || len(ds.Extra) != 2 {
		t.Fatalf("N %d, DataItem %v, C %d, %d extra columns", ds.N, ds.DataItem, ds.C, len(ds.Extra))
	}
	if c := ds.Extra[0]; c.Name != "target" || !slices.Equal(c.Item, []int{2}) {
		t.Fatalf("column 0: %q item %v", c.Name, c.Item)
	}
	if c := ds.Extra[1]; c.Name != "cont" || len(c.Item) != 0 || c.ItemSize() != 1 {
		t.Fatalf("column 1: %q item %v", c.Name, c.Item)
	}
	want := func(i int) (data, target []float32, cont float32) {
		for a := range 3 {
			for b := range 4 {
				data = append(data, float32(float64(i)+float64(a)/10+float64(b)/100))
			}
		}
		target = []float32{float32(0.25*float64(i) + 0.125), float32(0.25*float64(i) - 0.5 + 0.125)}
		cont = 1
		if i%4 == 0 {
			cont = 0
		}
		return
	}
	// Through a Loader, shuffled: each batch position carries its item's
	// values in every top.
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 5, Shuffle: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 4 {
		b, err := l.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for k, idx := range b.Index {
			d, tg, c := want(idx)
			if !slices.Equal(b.Data[k*12:(k+1)*12], d) || !slices.Equal(b.Extra[0][k*2:(k+1)*2], tg) || b.Extra[1][k] != c {
				t.Fatalf("item %d at %d: data %v target %v cont %v; want %v %v %v", idx, k,
					b.Data[k*12:(k+1)*12], b.Extra[0][k*2:(k+1)*2], b.Extra[1][k], d, tg, c)
			}
		}
		l.Release(b)
	}
	// Two tops whose second is not a class label (float targets): an
	// Extra column, not refused.
	ds, err = ReadHDF5Tops(list, []string{"data", "target"})
	if err != nil || len(ds.Extra) != 1 || ds.Extra[0].Values[1] != float32(0.125-0.5) {
		t.Fatalf("data+target: err %v, %+v", err, ds.Extra)
	}
	// Two tops whose second is whole numbers one per item: class labels.
	ds, err = ReadHDF5Tops(list, []string{"data", "cont"})
	if err != nil || len(ds.Extra) != 0 || ds.Classes != 2 || ds.Labels[4] != 0 || ds.Labels[5] != 1 {
		t.Fatalf("data+cont: err %v, extra %d, classes %d", err, len(ds.Extra), ds.Classes)
	}
	// A missing dataset names the file and the top.
	if _, err := ReadHDF5Tops(list, []string{"data", "nosuch"}); err == nil || !strings.Contains(err.Error(), `has no dataset "nosuch"`) {
		t.Fatalf("missing top: %v", err)
	}
}
