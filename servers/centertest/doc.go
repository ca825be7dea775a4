// Package centertest is the conformance suite of center.Center: Run
// drives an implementation through the interface's contract (push and
// pull, joins and iteration counts, SSP's staleness bound, EASGD's
// elastic exchange and round-robin turns, weed-out rounds, the finish
// rule, argument errors, errors after close and concurrent workers) and
// asserts the values the contract fixes, derived from the papers' rules
// rather than from center.Local.
//
// It lives under servers/ rather than beside protocol/center because the
// layering (layering_test.go) lets no protocol package import another
// dsgd package, protocol/center included; servers may import protocol.
package centertest
