// Package smb owns the shared buffer server of ShmCaffe (its SMB, section
// III.B): named float32 buffers held in one server's memory that workers
// create and attach by key, read and write at an offset, accumulate one
// into another on the server (ShmCaffe T.A3), and wait on; plus a control
// area of int64 slots that holds every worker's iteration count (III.E).
// It also owns the SEASGD adapter that builds center.Center's Pull, Push,
// Join, Clock and Leave from those buffers (III.F, Fig. 5), and the
// bandwidth benchmark of IV.B (Fig. 7).
//
// Layers:
//
//   - Store is the in-memory core: a map of buffers, each behind its own
//     RWMutex and version counter, and the control area. Usable directly
//     in-process.
//   - Server (Listen, Serve) exposes a Store over TCP through package rpc
//     (token hello, bounded frames, deadlines, keep-alives during waits);
//     it binds the loopback unless given a host; Run serves a fresh store
//     as dsgd smb does, logging each failed connection. Client (Dial) is the
//     other end: a pool of connections, safe for concurrent use, that
//     splits reads and writes longer than a frame.
//   - Buffers is the interface both Store and Client implement, with the
//     same semantics and errors (ErrUnknownKey, ErrBounds, ErrSize,
//     ErrLimit, ErrInvalid work with errors.Is on either).
//   - Center is the SEASGD adapter over any Buffers.
//
// Serving, and a worker's use through the adapter:
//
//	srv, err := smb.Listen("127.0.0.1:7070", smb.NewStore(maxBytes), smb.Config{Token: tok})
//	go srv.Serve(ctx)
//
//	cl, err := smb.Dial(ctx, "127.0.0.1:7070", smb.Config{Token: tok})
//	c, err := smb.NewCenter(cl, smb.CenterConfig{Workers: 4, N: len(w0), Weights: w0,
//		Finish: center.FinishAverage, MaxIter: 10000})
//	iter, err := c.Join(ctx, rank)
//	err = c.Pull(ctx, rank, params)            // read W_g
//	err = c.Push(ctx, rank, delta)             // write dW_<rank>, W_g += dW_<rank>
//	stop, err := c.Clock(ctx, rank, iter, -1)  // control area, finish rule
//
// The raw operations, in-process or remote alike:
//
//	created, err := b.Create(ctx, "W_g", n)    // exists with n: created == false
//	err = b.Write(ctx, "dW_3", 0, delta)
//	err = b.Accumulate(ctx, "W_g", "dW_3")     // W_g += dW_3, atomically
//	v, err := b.Version(ctx, "W_g")
//	v, err = b.Wait(ctx, "W_g", v)             // until the next change
//
// The server has no update logic (ShmCaffe III.C): Center's Elastic and
// Round are refused.
package smb
