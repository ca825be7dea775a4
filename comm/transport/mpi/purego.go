//go:build purego

package mpi

import (
	"errors"

	"dsgd/comm/transport"
)

// errPurego is every call's answer in a purego build: opening Open MPI at
// run time needs cgo.
var errPurego = errors.New("mpi: this dsgd was built with -tags purego, which has no MPI transport (it opens Open MPI through cgo); build without purego and install openmpi-bin libopenmpi3")

// Init reports that this build has no MPI.
func Init() error { return errPurego }

// Finalize does nothing in a purego build.
func Finalize() error { return nil }

// Version is empty in a purego build.
func Version() string { return "" }

// Endpoint is never made in a purego build.
type Endpoint struct{ transport.Endpoint }

// Abort is never reached in a purego build.
func (e *Endpoint) Abort(error) error { return errPurego }

// World reports that this build has no MPI.
func World() (*Endpoint, error) { return nil, errPurego }

// NewLocalGroup reports that this build has no MPI.
func NewLocalGroup(int) ([]transport.Endpoint, error) { return nil, errPurego }

// Native reports that this build has no MPI.
func Native(*Endpoint) (transport.Endpoint, error) { return nil, errPurego }
