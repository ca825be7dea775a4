package transport

import (
	"context"
	"fmt"
	"time"
)

// Endpoint is one rank's connection to a group of Size ranks, numbered
// 0..Size-1, that exchange tagged messages of float32 values or bytes.
//
// Contracts every implementation keeps (the conformance suite in
// transporttest checks them):
//   - Messages from one rank to another arrive in the order they were sent,
//     whatever their tags (per-pair FIFO). Messages between different
//     pairs are independent.
//   - Send may block until the receiver posts the matching Recv: no
//     buffering is promised. A caller that must send and receive at the
//     same time does so from two goroutines.
//   - Send does not retain buf once it returns; Recv fills buf completely.
//   - Recv returns a *PeerError when the next message from that rank has
//     another tag, kind (floats vs bytes) or length than asked for, when the
//     rank has gone away, or when it sent something malformed. It names the
//     rank.
//   - Every blocking call honours ctx. After a cancelled or failed call the
//     stream to that peer may be unusable; callers end the run.
//   - An Endpoint is safe for concurrent use as long as at most one
//     goroutine sends to a given peer and at most one receives from a given
//     peer at any time.
//   - Sending to or receiving from oneself is a programmer error (panic).
type Endpoint interface {
	// Rank is this endpoint's rank.
	Rank() int
	// Size is the number of ranks in the group.
	Size() int
	// Send sends buf to rank to, with tag.
	Send(ctx context.Context, to int, tag uint32, buf []float32) error
	// Recv receives the next message from rank from into buf.
	Recv(ctx context.Context, from int, tag uint32, buf []float32) error
	// SendBytes sends a byte message (control traffic) to rank to.
	SendBytes(ctx context.Context, to int, tag uint32, b []byte) error
	// RecvBytes receives the next message from rank from, which must be a
	// byte message with the tag and at most max bytes long.
	RecvBytes(ctx context.Context, from int, tag uint32, max int) ([]byte, error)
	// Stats reports the traffic so far.
	Stats() Stats
	// Close releases the endpoint; peers blocked on it get a *PeerError.
	Close() error
}

// Aborter is implemented by endpoints that can tell their peers why this
// rank is leaving. Abort sends reason to every peer, best effort and
// briefly, then closes the endpoint; a peer's pending or next receive from
// this rank fails with a *PeerError carrying the reason, so an error that
// cascades through a group still names its first cause.
type Aborter interface {
	Abort(reason error) error
}

// Abort ends ep's part in the group: with the reason where ep can send
// it (Aborter), else by closing it.
func Abort(ep Endpoint, reason error) error {
	if a, ok := ep.(Aborter); ok {
		return a.Abort(reason)
	}
	return ep.Close()
}

// Stats counts an endpoint's traffic. Bytes are what crossed the
// transport: with fp16 compression, half the float32 size.
type Stats struct {
	BytesSent, BytesRecv int64
	MsgsSent, MsgsRecv   int64
}

// Notifier is an Endpoint that can tell every peer why this rank is about
// to fail without closing: a peer's next receive from this rank fails with
// a PeerError carrying the reason, while this rank may still receive (to
// learn, in turn, what its peers are waiting on). TCP endpoints are.
type Notifier interface {
	// Notify returns the peers it could not tell because a send to them
	// has been stuck a while (they take no data: evidence that they
	// stopped).
	Notify(reason error) (stuck []int)
}

// Staller is an Endpoint that remembers, for each peer and direction,
// since when a transfer that has not finished moved no bytes. A rank
// whose collective timed out asks it which peer it was really held up
// by: a peer whose bytes were flowing a moment ago is alive, whatever
// the error that ended the collective names. TCP endpoints are.
type Staller interface {
	// Stalled returns the peer of the unfinished transfer (a send or a
	// receive that failed or is in progress) that has moved no bytes
	// for the longest, and since when; ok is false when there is none.
	Stalled() (peer int, since time.Time, ok bool)
}

// Hearer is an Endpoint that remembers when each peer's bytes last came
// in. A rank that timed out waiting on a peer gives the peer until its
// own timeout must have come to say whom it waits on: a healthy peer that
// began waiting later than this rank did (a straggler, one held up on a
// third rank) times out later too, and its last bytes bound when it began.
// TCP endpoints are.
type Hearer interface {
	// Heard returns when bytes from peer last came in, or the zero time
	// if none has.
	Heard(peer int) time.Time
}

// PeerError is an error caused by, or observed on, one peer.
type PeerError struct {
	Rank int
	Err  error
}

func (e *PeerError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }

// Unwrap returns the underlying error.
func (e *PeerError) Unwrap() error { return e.Err }

// CheckPeer panics unless peer is a valid rank other than self, the
// programmer errors every implementation rejects the same way.
func CheckPeer(self, size, peer int) {
	if peer < 0 || peer >= size {
		panic(fmt.Sprintf("transport: rank %d out of range [0,%d)", peer, size))
	}
	if peer == self {
		panic(fmt.Sprintf("transport: rank %d sending to or receiving from itself", self))
	}
}
