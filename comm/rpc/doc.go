// Package rpc owns dsgd's small request/response protocol over TCP, the
// layer under the parameter server (package ps) and the shared buffer
// server (package smb). It knows nothing of what the operations mean: a
// request is an op code, NumInts integers, NumFloats float64s, an optional
// short Text and an optional float32 payload; a response has the same
// fields, or an error string.
//
// Every message is one wire frame (package wire) of kind KindBytes whose
// Tag is the op code. A connection opens with a wire.Hello carrying the
// shared token and this package's Version; the server answers Welcome or
// Reject. Every read and write has a deadline (Config.Timeout), every
// frame a size bound (Config.MaxFrame). A frame that is malformed or too
// large closes that one connection; the server goes on serving the others.
// The hello itself is bounded tighter (wire.MaxHello, within
// netguard.HelloTimeout), at most Config.MaxPending connections wait to
// say it, an accept error (out of file descriptors) pauses the accept
// loop instead of ending it, and a server beyond loopback demands a token
// (package netguard).
// While a handler runs longer than a third of the Timeout the server sends
// keep-alive frames, so a client can tell a slow operation (an SSP wait)
// from a server that stopped answering.
//
// Serving:
//
//	srv, err := rpc.Listen("127.0.0.1:0", rpc.Config{Token: tok}, func(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
//		switch req.Op {
//		case opSum:
//			resp.Floats[0] = sum(req.Data) // req.Data is valid only during the call
//		case opGet:
//			buf := resp.Buffer(n) // the connection's reusable buffer
//			copy(buf, state)
//			resp.Data = buf
//		default:
//			return fmt.Errorf("unknown op %d", req.Op) // reaches the client as an error
//		}
//		return nil
//	})
//	go srv.Serve(ctx) // until ctx is done or srv.Close
//
// A handler that ties state to its client's connection (a worker that
// joined over it) learns of the connection's end, orderly or not, through
// ConnFrom and OnClose:
//
//	if c := rpc.ConnFrom(ctx); c != nil {
//		c.OnClose(func() { forget(who) }) // after the connection's last call
//	}
//
// Calling:
//
//	cl, err := rpc.Dial(ctx, srv.Addr(), rpc.Config{Token: tok})
//	defer cl.Close()
//	resp := rpc.Response{Data: dst[:0]} // the payload lands in dst when it fits
//	err = cl.Call(ctx, &rpc.Request{Op: opGet}, &resp)
//
// A Client is safe for concurrent use; calls on one connection are
// serialised. After a transport failure (timeout, cancelled context,
// broken connection) a Client is unusable and every call returns the
// error; an error returned by the handler (*RemoteError) leaves it usable.
// Steady-state calls allocate nothing for the payload.
package rpc
