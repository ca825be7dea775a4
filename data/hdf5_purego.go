//go:build purego

package data

import "fmt"

func readH5File(path, _, _ string) ([]float32, []int, []float32, error) {
	return nil, nil, nil, fmt.Errorf("HDF5 file %s: this dsgd was built with -tags purego, without the HDF5 C library; rebuild without purego (apt-get install libhdf5-dev)", path)
}
