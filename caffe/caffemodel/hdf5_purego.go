//go:build purego

package caffemodel

import "fmt"

func noHDF5(path string) error {
	return fmt.Errorf("caffemodel: HDF5 file %s: this dsgd was built with -tags purego, without the HDF5 C library; rebuild without purego (apt-get install libhdf5-dev) or use snapshot_format BINARYPROTO", path)
}

// WriteHDF5 refuses under purego: Caffe's HDF5 models need libhdf5.
func WriteHDF5(path string, _ *Net) error { return noHDF5(path) }

// ReadHDF5 refuses under purego: Caffe's HDF5 models need libhdf5.
func ReadHDF5(path string) (*Net, error) { return nil, noHDF5(path) }

// WriteStateHDF5 refuses under purego: Caffe's HDF5 solver states need
// libhdf5.
func WriteStateHDF5(path string, _ *State) error { return noHDF5(path) }

// ReadStateHDF5 refuses under purego: Caffe's HDF5 solver states need
// libhdf5.
func ReadStateHDF5(path string) (*State, error) { return nil, noHDF5(path) }

// HDF5Error says why this build cannot read or write HDF5 models: always,
// under purego.
func HDF5Error() error {
	return fmt.Errorf("caffemodel: Caffe's HDF5 snapshot format needs the HDF5 C library, and this dsgd was built with -tags purego; rebuild without purego (apt-get install libhdf5-dev) or use snapshot_format BINARYPROTO")
}
