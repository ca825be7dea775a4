// Package transporttest owns the conformance suite that every
// transport.Endpoint implementation passes: in-process, TCP (with and
// without fp16 compression) and the simulator's. It checks the contracts
// written on transport.Endpoint: per-pair FIFO order, independence of
// pairs under concurrency, PeerErrors naming the rank on tag, kind and
// length mismatches, the RecvBytes limit, large messages, cancellation,
// Close, Stats and the programmer-error panics.
//
// The canonical use, in an implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
//			return newGroupOfSize(t, size) // endpoints indexed by rank
//		})
//	}
//
// Each subtest asks for a fresh group and closes it when done. The float
// values the suite sends are exactly representable in IEEE half
// precision, so a transport that compresses to fp16 passes too, declaring
// its wire size with RunOptions(t, newGroup, Options{FloatBytes: 2}).
package transporttest
