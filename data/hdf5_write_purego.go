//go:build purego

package data

import "fmt"

// WriteHDF5 refuses under purego: writing HDF5 files needs libhdf5.
func WriteHDF5(path string, _ []string, _ [][]int, _ [][]float32) error {
	return fmt.Errorf("HDF5 file %s: this dsgd was built with -tags purego, without the HDF5 C library; rebuild without purego (apt-get install libhdf5-dev)", path)
}
