package caffemodel

import "strings"

// IsHDF5 says whether path names an HDF5 file by Caffe's rule: its name
// ends in ".h5" (Net::CopyTrainedLayersFrom and Solver::Restore choose
// the format so).
func IsHDF5(path string) bool { return strings.HasSuffix(path, ".h5") }

// ReadModel reads a trained net in either of Caffe's formats, chosen by
// the file's name as Caffe chooses it: HDF5 (.caffemodel.h5) when it
// ends in ".h5", else binary protobuf (.caffemodel).
func ReadModel(path string) (*Net, error) {
	if IsHDF5(path) {
		return ReadHDF5(path)
	}
	return Read(path)
}

// ReadAnyState reads a solver state in either of Caffe's formats, HDF5
// (.solverstate.h5) when the name ends in ".h5", else binary protobuf.
func ReadAnyState(path string) (*State, error) {
	if IsHDF5(path) {
		return ReadStateHDF5(path)
	}
	return ReadState(path)
}

// IsModel says whether path names a trained net in one of Caffe's
// formats by its name: NAME.caffemodel or an HDF5 model (".h5").
func IsModel(path string) bool { return strings.HasSuffix(path, ".caffemodel") || IsHDF5(path) }

// IsState says whether path names a Caffe solver state by its name:
// NAME.solverstate or NAME.solverstate.h5.
func IsState(path string) bool {
	return strings.HasSuffix(path, ".solverstate") || strings.HasSuffix(path, ".solverstate.h5")
}
