package collective

import (
	"fmt"
)

// NoPeer marks a Transfer that does not happen.
const NoPeer = -1

// Op says what a step does with the floats it receives.
type Op uint8

const (
	// Copy overwrites buf[Recv.Lo:Recv.Hi] with the received floats.
	Copy Op = iota
	// Add receives into scratch and then adds it into buf[Recv.Lo:Recv.Hi]
	// element by element (buf[i] += received[i]): the sum reduction.
	Add
)

// String returns "copy" or "add".
func (o Op) String() string {
	switch o {
	case Copy:
		return "copy"
	case Add:
		return "add"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Transfer is one message of a step: the range [Lo,Hi) of the rank's buffer
// sent to, or received from, Peer. Peer is NoPeer when there is no message.
// An empty range with a peer is a real, zero-length message (a barrier
// uses them); generators leave out empty data transfers altogether.
type Transfer struct {
	Peer   int
	Lo, Hi int
}

// Active reports whether the transfer happens.
func (t Transfer) Active() bool { return t.Peer != NoPeer }

// Len is the number of floats moved, 0 when the transfer does not happen.
func (t Transfer) Len() int {
	if t.Peer == NoPeer {
		return 0
	}
	return t.Hi - t.Lo
}

// none is the inactive transfer.
var none = Transfer{Peer: NoPeer}

// Step is one step of one rank's schedule: at most one send and at most one
// receive, which the executor runs concurrently (so a ring cannot deadlock
// on a rendezvous transport), then the reduction Op if it is Add. Steps of
// a schedule run in order.
//
// A step is plain data: a simulator can cost it without running it (peer,
// 4·Len() bytes each way, and Len() floats of arithmetic when Op is Add).
//
// Round numbers the step within the collective; matching send and receive
// steps on two ranks carry the same Round, and the message is tagged
// tagBase+Round, so a desynchronised peer is caught as a tag mismatch.
// Rounds increase along a schedule; a rank idle in a round has no step for
// it.
type Step struct {
	Round int
	Send  Transfer
	Recv  Transfer
	Op    Op
}

// Reduces reports the number of floats this step adds (0 unless it
// receives with Op Add).
func (s Step) Reduces() int {
	if s.Op == Add {
		return s.Recv.Len()
	}
	return 0
}

// String renders the step for traces and test failures, e.g.
// "r3 send[0,5)->1 recv[5,9)<-2 add".
func (s Step) String() string {
	out := fmt.Sprintf("r%d", s.Round)
	if s.Send.Active() {
		out += fmt.Sprintf(" send[%d,%d)->%d", s.Send.Lo, s.Send.Hi, s.Send.Peer)
	}
	if s.Recv.Active() {
		out += fmt.Sprintf(" recv[%d,%d)<-%d %v", s.Recv.Lo, s.Recv.Hi, s.Recv.Peer, s.Op)
	}
	return out
}

// Schedule is one rank's part of a collective operation over a buffer of N
// floats in a group of Size ranks.
//
// Segment, when positive, is the most floats one message carries: the
// executor moves a longer transfer as consecutive messages of Segment
// floats (the last one shorter), all tagged as the step, sending segment k
// and receiving segment k concurrently and adding each received segment
// before the next, so that scratch stays in cache and the add never makes
// a second pass over memory. Zero means one message per transfer. Every
// rank of a collective must use the same Segment; generators set
// DefaultSegment.
type Schedule struct {
	Rank, Size int
	N          int
	Segment    int
	Steps      []Step
}

// DefaultSegment is the Segment generators set: 1 Mi floats (4 MiB).
// Measured with dsgd bench-comm on the 2-core development machine, it beat
// 64 Ki and 256 Ki floats by 20-45 % at 16-64 MiB over TCP (fewer frames
// and wake-ups outweigh the received segment falling out of L2 before it
// is added) and was no worse below.
const DefaultSegment = 1 << 20

// Segments returns the number of messages a transfer of length floats
// takes under the schedule's Segment: 0 for an inactive transfer, at least
// 1 for an active one (a zero-length message is still a message).
func (s Schedule) Segments(t Transfer) int {
	switch {
	case !t.Active():
		return 0
	case s.Segment <= 0 || t.Len() <= s.Segment:
		return 1
	}
	return (t.Len() + s.Segment - 1) / s.Segment
}

// segment returns the range of segment k of t, clipped to empty past its end.
func (s Schedule) segment(t Transfer, k int) (lo, hi int) {
	if s.Segment <= 0 {
		return t.Lo, t.Hi
	}
	lo = min(t.Lo+k*s.Segment, t.Hi)
	return lo, min(lo+s.Segment, t.Hi)
}

// Validate checks that the schedule is well formed on its own: peers in
// range and not the rank itself, ranges inside [0,N), rounds increasing,
// known ops, Segment not negative, and no step whose receive lands in the
// range it sends unless it adds into exactly that range (as recursive
// doubling does: each segment is sent before its sum is formed). (Whether
// the ranks' schedules match each other is Verify's job.)
func (s Schedule) Validate() error {
	if s.Size < 1 || s.Rank < 0 || s.Rank >= s.Size {
		return fmt.Errorf("collective: rank %d of size %d", s.Rank, s.Size)
	}
	if s.N < 0 {
		return fmt.Errorf("collective: buffer length %d", s.N)
	}
	if s.Segment < 0 {
		return fmt.Errorf("collective: segment %d", s.Segment)
	}
	prev := -1
	for i, st := range s.Steps {
		if st.Round <= prev {
			return fmt.Errorf("collective: step %d (%v): round %d not after %d", i, st, st.Round, prev)
		}
		prev = st.Round
		if !st.Send.Active() && !st.Recv.Active() {
			return fmt.Errorf("collective: step %d (%v) neither sends nor receives", i, st)
		}
		if st.Op != Copy && st.Op != Add {
			return fmt.Errorf("collective: step %d: unknown op %d", i, st.Op)
		}
		for _, t := range [2]Transfer{st.Send, st.Recv} {
			if !t.Active() {
				continue
			}
			if t.Peer < 0 || t.Peer >= s.Size || t.Peer == s.Rank {
				return fmt.Errorf("collective: step %d (%v): bad peer %d for rank %d of %d", i, st, t.Peer, s.Rank, s.Size)
			}
			if t.Lo < 0 || t.Hi < t.Lo || t.Hi > s.N {
				return fmt.Errorf("collective: step %d (%v): range outside [0,%d)", i, st, s.N)
			}
		}
		if st.Send.Active() && st.Recv.Active() && st.Send.Lo < st.Recv.Hi && st.Recv.Lo < st.Send.Hi &&
			(st.Op == Copy || st.Send.Lo != st.Recv.Lo || st.Send.Hi != st.Recv.Hi) {
			return fmt.Errorf("collective: step %d (%v) changes the range it sends", i, st)
		}
	}
	return nil
}

// Cost is what one rank's schedule moves and computes, for the simulator's
// α-β-γ model and for the docs. Bytes count float32s (4 bytes each), before
// any compression a transport applies.
type Cost struct {
	Steps         int   // steps that send or receive
	Rounds        int   // last round + 1: the collective's length in rounds as seen by this rank
	MsgsSent      int   // messages sent, counting each segment
	MsgsRecv      int   // messages received, counting each segment
	BytesSent     int64 // payload bytes sent
	BytesRecv     int64 // payload bytes received
	FloatsReduced int64 // float additions performed
	ScratchLen    int   // floats of scratch the executor needs (the largest Add receive, or segment of one)
}

// Cost returns what the schedule moves and computes. It is a pure function
// of the schedule.
func (s Schedule) Cost() Cost {
	var c Cost
	c.Steps = len(s.Steps)
	if len(s.Steps) > 0 {
		c.Rounds = s.Steps[len(s.Steps)-1].Round + 1
	}
	for _, st := range s.Steps {
		c.MsgsSent += s.Segments(st.Send)
		c.MsgsRecv += s.Segments(st.Recv)
		c.BytesSent += 4 * int64(st.Send.Len())
		c.BytesRecv += 4 * int64(st.Recv.Len())
		if r := st.Reduces(); r > 0 {
			c.FloatsReduced += int64(r)
			if s.Segment > 0 {
				r = min(r, s.Segment)
			}
			c.ScratchLen = max(c.ScratchLen, r)
		}
	}
	return c
}
