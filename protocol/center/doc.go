// Package center owns the shared state of the asynchronous and
// elastic-averaging schemes: the center (global) weights that workers
// pull from and push into, the elastic exchange of EASGD, the rounds of
// weed-out SGD, and the control area that holds every worker's iteration
// count (for SSP's staleness bound and ShmCaffe's aligned termination).
//
// Center is the interface a worker's driver (package node) calls; the
// schemes (package scheme) only name its operations as actions. Local is
// the in-process implementation, and the one every server wraps: the
// parameter server (package ps) serves a Local over TCP, the shared
// buffer server (package smb) offers the buffers SEASGD builds the same
// operations from, and a Redis store can carry the weights.
//
//	c := center.NewLocal(center.Config{Workers: 4, Weights: w0})
//	err := c.Pull(ctx, 1, params)
//	err = c.Push(ctx, 1, delta)
package center
