//go:build !purego

package hdf5lock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"dsgd/caffe/caffemodel"
	"dsgd/data"
	"dsgd/internal/hdf5lock"
)

// fixtures are a Caffe HDF5Data file (h5py-made, in data's testdata) and
// a Caffe HDF5 model (caffemodel's testdata).
var (
	trainH5 = filepath.Join("..", "..", "data", "testdata", "caffe", "train.h5")
	modelH5 = filepath.Join("..", "..", "caffe", "caffemodel", "testdata", "siamese.caffemodel.h5")
)

// h5List writes a one-line HDF5Data source naming trainH5.
func h5List(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(trainH5)
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(t.TempDir(), "list.txt")
	if err := os.WriteFile(list, []byte(abs+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return list
}

// references reads both fixtures once, before anything runs concurrently.
func references(t *testing.T) (list string, ds *data.Dataset, net *caffemodel.Net) {
	t.Helper()
	list = h5List(t)
	ds, err := data.ReadHDF5List(list, "data", "label")
	if err != nil {
		t.Fatal(err)
	}
	net, err = caffemodel.ReadHDF5(modelH5)
	if err != nil {
		t.Fatal(err)
	}
	return list, ds, net
}

// readData reads the HDF5Data source through data and compares it with want.
func readData(list string, want *data.Dataset) error {
	ds, err := data.ReadHDF5List(list, "data", "label")
	if err != nil {
		return err
	}
	if ds.N != want.N || !slices.Equal(ds.Floats, want.Floats) || !slices.Equal(ds.Labels, want.Labels) {
		return fmt.Errorf("data read %d items, differing from the %d read alone", ds.N, want.N)
	}
	return nil
}

// writeModel writes net through caffemodel and reads it back.
func writeModel(path string, net *caffemodel.Net) error {
	if err := caffemodel.WriteHDF5(path, net); err != nil {
		return err
	}
	back, err := caffemodel.ReadHDF5(path)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(back, net) {
		return fmt.Errorf("%s reads back differing from what was written", path)
	}
	return nil
}

// TestPackagesShareTheLock: while the test holds hdf5lock, neither data's
// HDF5Data reader nor caffemodel's HDF5 writer gets into libhdf5. A
// package that took a mutex of its own would finish inside the window
// (each call takes about a millisecond) and fail the test; a package
// under the one lock cannot finish there, so the test cannot fail
// spuriously, however loaded the machine.
func TestPackagesShareTheLock(t *testing.T) {
	list, want, net := references(t)
	dir := t.TempDir()
	hdf5lock.Lock()
	locked := true
	defer func() {
		if locked {
			hdf5lock.Unlock()
		}
	}()
	done := make(chan string, 2)
	errs := make(chan error, 2)
	go func() {
		errs <- readData(list, want)
		done <- "data.ReadHDF5List"
	}()
	go func() {
		errs <- writeModel(filepath.Join(dir, "m.caffemodel.h5"), net)
		done <- "caffemodel.WriteHDF5"
	}()
	select {
	case who := <-done:
		t.Fatalf("%s finished while another package held the libhdf5 lock: it calls libhdf5 under a lock of its own", who)
	case <-time.After(300 * time.Millisecond):
	}
	hdf5lock.Unlock()
	locked = false
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
		<-done
	}
}

// TestConcurrentReadWrite reads an HDF5Data file through data while
// writing and re-reading .caffemodel.h5 files through caffemodel, from
// several goroutines at once (run it with -race): every result must equal
// the one made alone. libhdf5 often survives a few overlapping calls, so
// this test finds a missing lock only by chance; TestPackagesShareTheLock
// is the one that always does.
func TestConcurrentReadWrite(t *testing.T) {
	list, want, net := references(t)
	dir := t.TempDir()
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*rounds)
	for g := range 2 {
		wg.Go(func() {
			for range rounds {
				errs <- readData(list, want)
			}
		})
		wg.Go(func() {
			for i := range rounds {
				errs <- writeModel(filepath.Join(dir, fmt.Sprintf("m%d-%d.caffemodel.h5", g, i)), net)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
