//go:build purego

package caffemodel

import (
	"strings"
	"testing"
)

// Under purego, Caffe's HDF5 files are refused with a clear error.
func TestHDF5Purego(t *testing.T) {
	errs := []error{HDF5Error(), WriteHDF5("m.caffemodel.h5", &Net{}), WriteStateHDF5("s.solverstate.h5", &State{})}
	_, err := ReadModel("testdata/siamese.caffemodel.h5")
	errs = append(errs, err)
	_, err = ReadAnyState("testdata/siamese.solverstate.h5")
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "purego") || !strings.Contains(err.Error(), "libhdf5-dev") {
			t.Errorf("call %d: %v", i, err)
		}
	}
}
