// Package transport owns how ranks exchange messages: the Endpoint
// interface every scheme's driver and every collective speaks, and its
// in-process implementation (goroutines sharing memory). Network
// implementations live in subpackages (comm/transport/tcp) and the simulator
// provides a virtual-time one; all pass the conformance suite in
// transporttest.
//
// The canonical use:
//
//	eps := transport.NewInproc(4)          // one Endpoint per rank
//	go func() { eps[1].Send(ctx, 0, tag, grads) }()
//	err := eps[0].Recv(ctx, 1, tag, buf)
//
// Nothing here knows what the messages mean: tags are chosen by the
// caller (the collective package reserves ranges).
package transport
