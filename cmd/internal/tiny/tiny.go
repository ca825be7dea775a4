package tiny

import _ "embed" // for the net and solver files

// Net is the tiny net, net.prototxt: two InnerProduct layers over
// synthetic 1x8x8 images of 4 classes, with a TRAIN and a TEST Data layer.
//
//go:embed net.prototxt
var Net string

// Solver is solver.prototxt: 150 iterations of SGD on "net.prototxt",
// testing every 50, a snapshot every 20 under "out/tiny", and Caffe's
// solver_mode: GPU (trained on GPU 0 where there is one, else on the CPU,
// with a note saying which).
//
//go:embed solver.prototxt
var Solver string
