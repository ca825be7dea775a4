// Package tiny holds the tiny Caffe net and solver that the command's
// tests (cmd/dsgd) and the fault matrix (cmd/faults) train: a net over
// synthetic data that trains to full accuracy in moments, so that a case
// exercises the command and its failure handling rather than the model.
// The files are net.prototxt and solver.prototxt beside this one; a case
// writes them into its own directory under those names.
package tiny
