// Package ps owns dsgd's parameter server: a center.Center served over
// TCP (package rpc) to the workers of the asynchronous schemes, the
// Client that implements center.Center by calling such a server, and
// Sharded, which splits the parameters by contiguous ranges over several
// Centers — several parameter server processes, FireCaffe 6.1's "pool of
// nodes".
//
// A server process wraps the center it owns (a center.Local):
//
//	srv, err := ps.Listen(addr, local, ps.ServerConfig{Token: tok})
//	go srv.Serve(ctx) // until ctx is done
//
// and each worker dials it and uses the Client as its center.Center:
//
//	c, err := ps.Dial(ctx, addr, ps.ClientConfig{Token: tok})
//	defer c.Close()
//	err = c.Pull(ctx, rank, params)
//
// Sharded over k servers, each serving the range [lo,hi) of the
// parameters (a center.Local built over w0[lo:hi], bounds from
// EvenBounds):
//
//	sh, err := ps.DialSharded(ctx, addrs, ps.ClientConfig{Token: tok})
//
// With a BlobStore (SpeeDO's Redis) set on both sides, every weight
// transfer of the center schemes moves through the store and only keys,
// versions and control travel over the server's own connection: a Push
// puts the delta under DeltaKey(worker) and sends the key; the server
// gets it, applies it and puts the new center under WeightsKey; a Pull
// asks the server for the current version, then gets WeightsKey from the
// store; an elastic exchange puts the worker's weights under
// ExchangeKey(worker), the server exchanges and puts the result back
// there; a weed-out round's gradients go under GradsKey(worker). Join,
// Clock, Leave and Closed are control only. (sync-ps is not a center
// scheme: its transfers are the group's own messages.)
//
// A worker whose connection closes without its Leave (a killed process)
// leaves the center with an error, so that the others stop waiting for it;
// restarted, it joins again and continues its iteration count.
//
// Client and Sharded are safe for concurrent use. A Client's calls are
// serialised on one connection: give each worker its own Client.
package ps
