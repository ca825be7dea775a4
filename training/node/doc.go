// Package node owns the runtime driver of one rank: it feeds a scheme's
// state machine (package scheme) with events from real goroutines and a
// transport, and carries out the actions it returns — compute on the
// model, collectives and point-to-point transfers over the rank's
// Endpoint, local arithmetic and solver updates — while accounting the
// rank's exposed communication and update time.
//
// One Rank runs one select loop; compute runs on its own goroutine (so a
// scheme can start reducing a layer's gradients while backward goes on),
// and communication runs on another, one action at a time in issue order,
// so every rank's collectives line up.
//
//	r := &node.Rank{Scheme: ranks[i], Ep: eps[i], Params: p, Grads: g, Computer: c, Update: step}
//	err := r.Run(ctx)
//
// The simulator drives the same scheme code on a virtual clock instead.
package node
