//go:build !purego

package data

/*
#cgo pkg-config: hdf5
#include <stdlib.h>
#include <hdf5.h>

static void dsgd_h5w_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }
static hid_t dsgd_h5_create(const char *name) { return H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); }

// dsgd_h5_write_float writes a float dataset of the given rank and
// dimensions from buf, as Caffe's hdf5_save_nd_dataset does.
static int dsgd_h5_write_float(hid_t f, const char *name, int rank, const hsize_t *dims, const float *buf) {
	hid_t s = H5Screate_simple(rank, dims, NULL);
	if (s < 0) return -1;
	hid_t d = H5Dcreate2(f, name, H5T_NATIVE_FLOAT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Sclose(s);
	if (d < 0) return -1;
	herr_t r = H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
	if (H5Dclose(d) < 0) return -1;
	return r < 0 ? -1 : 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"dsgd/internal/atomicfile"
	"dsgd/internal/hdf5lock"
)

// WriteHDF5 writes an HDF5 file of float32 datasets, dataset i named
// names[i] with dimensions shapes[i] and the values vals[i] (row-major),
// the layout HDF5Data reads and Caffe's HDF5Output writes. It writes a
// temporary file beside path and renames it into place, so readers never
// see a partial file.
func WriteHDF5(path string, names []string, shapes [][]int, vals [][]float32) (err error) {
	if len(names) != len(shapes) || len(names) != len(vals) {
		return fmt.Errorf("data: WriteHDF5 %s: %d names, %d shapes and %d value sets", path, len(names), len(shapes), len(vals))
	}
	for i, s := range shapes {
		n := 1
		for _, d := range s {
			if d < 0 {
				return fmt.Errorf("data: WriteHDF5 %s: dataset %q has a negative dimension in %v", path, names[i], s)
			}
			n *= d
		}
		if len(s) == 0 || n != len(vals[i]) {
			return fmt.Errorf("data: WriteHDF5 %s: dataset %q of shape %v needs %d values, got %d", path, names[i], s, n, len(vals[i]))
		}
	}
	if err := atomicfile.WriteByName(path, 0o644, func(tmp string) error {
		return writeH5(tmp, names, shapes, vals)
	}); err != nil {
		return fmt.Errorf("data: writing HDF5 file %s: %w", path, err)
	}
	return nil
}

// writeH5 creates (truncating) the HDF5 file path and writes the datasets,
// under the process's libhdf5 lock.
func writeH5(path string, names []string, shapes [][]int, vals [][]float32) (err error) {
	hdf5lock.Lock()
	defer hdf5lock.Unlock()
	C.dsgd_h5w_quiet()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	f := C.dsgd_h5_create(cpath)
	if f < 0 {
		return errors.New("cannot create the file")
	}
	defer func() {
		if C.H5Fclose(f) < 0 && err == nil {
			err = errors.New("closing the file failed")
		}
	}()
	for i, n := range names {
		dims := make([]C.hsize_t, len(shapes[i]))
		for j, d := range shapes[i] {
			dims[j] = C.hsize_t(d)
		}
		var zero C.float
		buf := &zero
		if len(vals[i]) > 0 {
			buf = (*C.float)(unsafe.Pointer(&vals[i][0]))
		}
		cn := C.CString(n)
		r := C.dsgd_h5_write_float(f, cn, C.int(len(dims)), &dims[0], buf)
		C.free(unsafe.Pointer(cn))
		if r < 0 {
			return fmt.Errorf("cannot write dataset %q", n)
		}
	}
	return nil
}
