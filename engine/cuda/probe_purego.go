//go:build purego

package cuda

import "errors"

// Probe says that a purego build opens no C library, the CUDA driver
// included.
func Probe() (*Info, error) {
	return nil, errors.New("this dsgd was built with -tags purego, which opens no C library: no GPU (a build without the tag opens the CUDA driver)")
}

// Query says what Probe says: a purego build sees no GPU.
func Query(int) ([]Property, error) {
	_, err := Probe()
	return nil, err
}
