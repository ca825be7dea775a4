//go:build purego

package data

import "fmt"

func readH5File(path string, _ []string) ([][]float32, [][]int, error) {
	return nil, nil, fmt.Errorf("HDF5 file %s: this dsgd was built with -tags purego, without the HDF5 C library; rebuild without purego (apt-get install libhdf5-dev)", path)
}
