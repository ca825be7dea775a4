// Package tcp owns dsgd's network transport: a transport.Endpoint whose
// ranks are processes, on one host or many, joined by one TCP connection
// per pair of ranks.
//
// A group assembles through a rendezvous: rank 0 listens on
// Config.Rendezvous, the other ranks say Hello there (token, rank, world
// size, model hash, data address), and rank 0 refuses any that disagree —
// wrong token, world size, duplicate rank, parameter layout — with a
// message naming both sides, then hands everyone the data addresses. Each
// rank then dials the ranks above it. Connect returns when the mesh is
// complete, or fails within Config.Timeout.
// Before a peer has said a valid Hello it is a stranger: its Hello may be
// at most wire.MaxHello bytes and must come within netguard.HelloTimeout,
// at most netguard.DefaultPending strangers wait at once (the oldest is
// closed), accept errors back off instead of ending the rendezvous, tokens
// are compared in constant time, and a rank listening beyond loopback
// must have a token.
//
// Messages are frames in the wire package's format: a 24-byte header and
// the payload. A float32 Send is one vectored write of the header and the
// slice's own memory (no copy; the package assumes, and checks, a
// little-endian host); a Recv reads the header, checks tag, kind and
// length against what it asked for, and reads the payload straight into
// the caller's slice. With Config.Compress fp16 the floats travel as IEEE
// halves, converted through a small fixed staging buffer per connection.
// Steady-state Send and Recv allocate nothing. Every read and write has a
// deadline (Config.Timeout of no progress, or the ctx's deadline) and a
// cancelled ctx interrupts the call. A peer that goes away, stalls, or
// sends a malformed or unexpected frame yields a *transport.PeerError
// naming it; after a failure mid-message the connection is closed, so
// the peer's own calls fail too instead of hanging.
//
// Stats count payload bytes as they cross the wire (halved under fp16),
// like every transport's; each message also carries a 24-byte header, not
// counted. Payloads carry no checksum of their own: TCP's is relied on.
//
// The transport is written once over a StreamLayer (Listen and Dial); TCP
// is the default one and tests wrap it to inject faults.
//
// The canonical use, in every process of a group of 4:
//
//	ep, err := tcp.Connect(ctx, tcp.Config{
//		Rank: rank, Size: 4, Rendezvous: "10.0.0.1:29500",
//		Listen: "0.0.0.0:0", Token: token,
//		ModelHash: layoutHash, // of the parameters: ranks must agree
//	})
//	if err != nil { ... } // names the rank or peer at fault
//	defer ep.Close()
package tcp
