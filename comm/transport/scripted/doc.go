// Package scripted is a transport whose messages move only when a test
// says so: the endpoints of a group of ranks in one process, where every
// message sent waits in the queue of its directed link (from→to) until
// the script delivers it, drops it, or holds the link back. Tests drive
// protocols over it one decision at a time, in the style of etcd-io/raft's
// interaction tests, and read at every point who waits on whom
// (Net.Blocked) and what is in flight (Net.Queued).
//
//	nw := scripted.New(3)
//	eps := nw.Endpoints()   // one per rank, given to the code under test
//	nw.Deliver(0, 1, 1)     // the oldest 0→1 message reaches rank 1
//	nw.Drop(2, 1)           // the oldest 2→1 message is lost
//	nw.Hold(1, 2, true)     // DeliverAll passes 1→2 by (reordering it
//	                        // against the other links)
//	nw.Expire(1)            // rank 1's blocked calls time out
//	nw.Crash(2)             // rank 2's endpoint closes
//
// A Send never blocks: it copies the message into its link's queue and
// returns. A Recv takes the oldest delivered message of its link and
// waits while there is none. Per-link order is kept (the Endpoint
// contract's per-pair FIFO): delivery, drops and holds act on a link's
// oldest message only, so a script reorders messages across links, never
// within one.
//
// A closed, aborted or crashed rank's undelivered messages are lost, and
// so are those queued to it; the messages it had delivered stay readable.
// A peer's waiting and later receives from it then fail with a
// *transport.PeerError naming it, as do sends to it.
//
// With Auto set (NewAuto), every message is delivered as it is sent: the
// ordinary in-process transport, which is how the conformance suite
// (transporttest) checks the package.
//
// The Net keeps no clock and starts no goroutine. Its waits are on
// channels, so under testing/synctest a rank blocked in a Recv is durably
// blocked and synctest.Wait tells a script when every rank has gone as
// far as it can.
package scripted
