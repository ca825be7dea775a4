package transport

import "time"

// LinkStats is the traffic an endpoint carried over one kind of link:
// shared memory ("shm") or TCP ("tcp") in the tcp transport.
type LinkStats struct {
	// Kind names the link: "shm", "tcp".
	Kind string
	// Peers is the number of peers this endpoint reaches over it.
	Peers int
	// Bytes and messages as in Stats.
	BytesSent, BytesRecv int64
	MsgsSent, MsgsRecv   int64
	// Busy is the time Send and Recv calls spent on links of this kind,
	// from entry to return (waits for the peer included), summed over
	// calls: concurrent calls each count.
	Busy time.Duration
}

// LinkStatser is implemented by endpoints whose peers are reached over
// more than one kind of link.
type LinkStatser interface {
	// LinkStats reports the traffic by kind of link, one entry per kind
	// that reaches at least one peer.
	LinkStats() []LinkStats
}

// Links returns ep's traffic by kind of link, or nil when ep does not
// tell (LinkStatser).
func Links(ep Endpoint) []LinkStats {
	if l, ok := ep.(LinkStatser); ok {
		return l.LinkStats()
	}
	return nil
}
