package zoo

import (
	"embed"
	"fmt"
	"strings"
)

// files holds the model files, models/NAME.prototxt and
// models/NAME_solver.prototxt.
//
//go:embed models/*.prototxt
var files embed.FS

// Model is one built-in model.
type Model struct {
	// Name is the name the model is looked up by ("lenet").
	Name string
	// Description says in one line what the model is.
	Description string
	// NetFile and SolverFile are the models' file names ("lenet.prototxt",
	// "lenet_solver.prototxt"), for error positions; the solver's net field
	// names NetFile.
	NetFile, SolverFile string
	// Net and Solver are the prototxt files' contents. Each Lookup returns
	// fresh copies, which the caller may modify.
	Net, Solver []byte
}

// catalog lists the models, sorted by name, with their descriptions.
func catalog() [][2]string {
	return [][2]string{
		{"alexnet", "a small AlexNet for 28x28 or 32x32 images: 5 conv + LRN + max pool, 2 fc with dropout, Fashion-MNIST"},
		{"caffenet", "BVLC's reference CaffeNet: 5 conv + LRN, 3 fc with dropout, 227x227 crops, 1000 classes; synthetic 256x256 data"},
		{"cifar10_quick", "Caffe's cifar10_quick: 3 conv + pool, 2 fc, CIFAR-10"},
		{"googlenet", "BVLC's GoogLeNet: 9 inception modules, 2 auxiliary losses at 0.3, 224x224 crops, 1000 classes; synthetic 256x256 data"},
		{"lenet", "Caffe's MNIST LeNet: 2 conv + max pool, 2 fc, Fashion-MNIST"},
		{"mlp", "a multilayer perceptron 784-512-256-10 with ReLU, Fashion-MNIST"},
		{"nin", "a small Network in Network: conv + 1x1 conv blocks, global average pooling, Fashion-MNIST"},
	}
}

// Names returns the names of the built-in models, sorted.
func Names() []string {
	var out []string
	for _, e := range catalog() {
		out = append(out, e[0])
	}
	return out
}

// Lookup returns the built-in model called name, or an error listing the
// models there are.
func Lookup(name string) (Model, error) {
	for _, e := range catalog() {
		if e[0] != name {
			continue
		}
		m := Model{Name: name, Description: e[1], NetFile: name + ".prototxt", SolverFile: name + "_solver.prototxt"}
		var err error
		if m.Net, err = files.ReadFile("models/" + m.NetFile); err != nil {
			panic("zoo: model file missing from the embedded files: " + err.Error())
		}
		if m.Solver, err = files.ReadFile("models/" + m.SolverFile); err != nil {
			panic("zoo: model file missing from the embedded files: " + err.Error())
		}
		return m, nil
	}
	return Model{}, fmt.Errorf("zoo: no built-in model %q; the models are %s", name, strings.Join(Names(), ", "))
}

// Get returns the net and solver prototxt of the built-in model called
// name, or an error listing the models there are. Use Lookup for the file
// names to parse them under.
func Get(name string) (net, solver []byte, err error) {
	m, err := Lookup(name)
	if err != nil {
		return nil, nil, err
	}
	return m.Net, m.Solver, nil
}
