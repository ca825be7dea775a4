// Package zoo holds dsgd's built-in models: pairs of Caffe net and solver
// prototxt files, embedded in the binary, that a user picks by name
// ("dsgd train --model lenet") instead of writing prototxt.
//
// It owns only the model files; parsing them is the caffedef package's job.
// The models read the data sets dsgd ships with: lenet, mlp, nin and
// alexnet read "fashion-mnist" (28x28 single-channel; nin and alexnet also
// fit 32x32x3 inputs), cifar10_quick reads "cifar10".
//
// The canonical use:
//
//	m, err := zoo.Lookup("lenet")
//	if err != nil {
//		return err // names the models there are
//	}
//	nd, err := config.ParseNet(m.NetFile, m.Net)
//	...
//	sd, err := config.ParseSolver(m.SolverFile, m.Solver)
//
// Passing NetFile and SolverFile as the file names makes error positions
// read "lenet.prototxt:12:3", and a user who copies the files out (see
// Model) gets the same positions.
package zoo
