// Package wire owns the bytes every dsgd process speaks to another: the
// fixed frame header that precedes each message, the float32↔float16
// conversion used by fp16 compression, and the control messages of the
// rendezvous (Hello, Welcome, Reject). It is the leaf of the dependency
// graph: it imports only the standard library and does no I/O.
//
// A frame is a HeaderSize-byte header followed by Header.Len payload bytes.
// Everything is little-endian. The canonical use, on the sending side:
//
//	var hdr [wire.HeaderSize]byte
//	wire.PutHeader(hdr[:], wire.Header{Kind: wire.KindFloat32, Tag: tag, Len: 4 * uint64(n), Seq: seq})
//	// write hdr, then the payload
//
// and on the receiving side, before reading or allocating any payload:
//
//	h, err := wire.ParseHeader(hdr[:], maxFrame) // validates magic, version, kind, length
//
// Control messages travel as the payload of a KindControl frame:
//
//	p, _ := wire.Hello{Token: tok, Rank: 3, Size: 4}.AppendBinary(nil)
//	m, err := wire.DecodeControl(p) // a Hello, Welcome or Reject
//
// Every decoder validates its whole input and returns an error wrapping
// ErrMalformed or ErrTooLarge; none panics or allocates more than its
// input justifies, whatever the bytes.
package wire
