// Package faulty owns fault injection for tests: wrappers that make any
// transport lose, delay or cut messages, and connections that turn to
// garbage or break mid-stream under a stream-based transport.
//
// Message faults are rules on the directed links of a group, kept by a
// Net that wraps every endpoint of the group:
//
//	nw := faulty.New(transport.NewInproc(4)) // or TCP endpoints
//	eps := nw.Endpoints()                   // use these instead
//	nw.Drop(1, 0, faulty.Nth(3))            // 1→0 loses its 4th message
//	nw.Delay(2, 0, 5*time.Millisecond)      // 2→0 is slow
//	nw.Cut(3, 0, 10)                        // 3↔0 fails after ten 3→0 messages
//
// A dropped message is reported sent and never arrives: the receiver's
// Recv blocks, so tests observe a drop through the ctx deadline they give
// it (or through Dropped). A cut link fails both ways with a PeerError
// wrapping ErrCut, on the sender's Sends and, once the messages that got
// through are consumed, on the receiver's Recvs.
//
// Byte-level faults work on net.Conns: a Stream wraps a stream layer
// (such as tcp.TCP) so that every connection it makes is a *Conn, which a
// test turns into a garbage writer (CorruptAfter) or breaks mid-message
// (BreakAfter).
package faulty
