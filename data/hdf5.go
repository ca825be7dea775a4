//go:build !purego

package data

/*
#cgo pkg-config: hdf5
#include <stdlib.h>
#include <hdf5.h>

static void dsgd_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }
static hid_t dsgd_h5_open(const char *name) { return H5Fopen(name, H5F_ACC_RDONLY, H5P_DEFAULT); }
static hid_t dsgd_h5_dopen(hid_t f, const char *name) {
	if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return -2;
	return H5Dopen2(f, name, H5P_DEFAULT);
}
static herr_t dsgd_h5_read_float(hid_t d, float *buf) {
	return H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
}
static int dsgd_h5_dims(hid_t d, hsize_t *dims, int max) {
	hid_t s = H5Dget_space(d);
	if (s < 0) return -1;
	int n = H5Sget_simple_extent_ndims(s);
	if (n > 0 && n <= max) H5Sget_simple_extent_dims(s, dims, NULL);
	H5Sclose(s);
	return n;
}
*/
import "C"

import (
	"fmt"
	"math"
	"os"
	"unsafe"

	"dsgd/internal/hdf5lock"
)

// readH5Dataset reads the float dataset name of the open file f, with its
// dimensions.
func readH5Dataset(path string, f C.hid_t, name string) ([]float32, []int, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	d := C.dsgd_h5_dopen(f, cname)
	if d == -2 {
		return nil, nil, fmt.Errorf("%s has no dataset %q (HDF5Data reads the datasets named by its tops)", path, name)
	}
	if d < 0 {
		return nil, nil, fmt.Errorf("%s: cannot open dataset %q (corrupt or truncated file?)", path, name)
	}
	defer C.H5Dclose(d)
	var cdims [8]C.hsize_t
	nd := int(C.dsgd_h5_dims(d, &cdims[0], 8))
	if nd < 1 || nd > 8 {
		return nil, nil, fmt.Errorf("%s: dataset %q has %d dimensions, want 1..8", path, name, nd)
	}
	dims := make([]int, nd)
	total := 1
	for i := range dims {
		if cdims[i] > math.MaxInt32 {
			return nil, nil, fmt.Errorf("%s: dataset %q dimension %d is too large", path, name, cdims[i])
		}
		dims[i] = int(cdims[i])
		n, ok := mulInts(total, dims[i])
		if !ok || n > 1<<34 {
			return nil, nil, fmt.Errorf("%s: dataset %q is too large (%v)", path, name, dims)
		}
		total = n
	}
	// Bound the allocation by the file's size: a dataset cannot hold
	// more values than the file has bytes (compression aside, which
	// Caffe's tools do not use for data).
	if st, err := os.Stat(path); err == nil && int64(total) > 64*st.Size()+1<<20 {
		return nil, nil, fmt.Errorf("%s: dataset %q claims %v values, more than the %d-byte file can hold", path, name, dims, st.Size())
	}
	buf := make([]float32, total)
	if total > 0 && C.dsgd_h5_read_float(d, (*C.float)(unsafe.Pointer(&buf[0]))) < 0 {
		return nil, nil, fmt.Errorf("%s: cannot read dataset %q as float (corrupt or truncated file?)", path, name)
	}
	return buf, dims, nil
}

// readH5File reads the named datasets of one .h5 file, with their
// dimensions; every one must hold the same number of items (its first
// dimension), as Caffe's HDF5Data requires.
func readH5File(path string, names []string) (vals [][]float32, dims [][]int, err error) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("HDF5 file: %w", err)
	}
	hdf5lock.Lock()
	defer hdf5lock.Unlock()
	C.dsgd_h5_quiet()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	f := C.dsgd_h5_open(cpath)
	if f < 0 {
		return nil, nil, fmt.Errorf("%s is not a readable HDF5 file (corrupt or truncated?)", path)
	}
	defer C.H5Fclose(f)
	for _, name := range names {
		v, d, err := readH5Dataset(path, f, name)
		if err != nil {
			return nil, nil, err
		}
		if len(dims) > 0 && d[0] != dims[0][0] {
			return nil, nil, fmt.Errorf("%s: dataset %q has %d items (shape %v) but %q has %d; HDF5Data needs the same number in every dataset", path, name, d[0], d, names[0], dims[0][0])
		}
		vals, dims = append(vals, v), append(dims, d)
	}
	return vals, dims, nil
}
