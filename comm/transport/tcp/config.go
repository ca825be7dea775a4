package tcp

import (
	"context"
	"fmt"
	"net"
	"time"

	"dsgd/comm/netguard"
	"dsgd/comm/wire"
)

// Defaults filled in by Connect for zero Config fields.
const (
	DefaultListen   = "127.0.0.1:0"
	DefaultTimeout  = 60 * time.Second
	DefaultMaxFrame = 1 << 30
)

// Compress says how float32 messages travel.
type Compress uint8

const (
	// CompressNone sends float32 values as they are.
	CompressNone Compress = iota
	// CompressFP16 sends each float32 as an IEEE half, rounded to nearest
	// even: half the bytes, about three decimal digits, magnitudes above
	// 65504 become infinite and below 2^-24 zero. Receivers accept either
	// form whatever their own setting.
	CompressFP16
)

// String returns the name ParseCompress accepts.
func (c Compress) String() string {
	switch c {
	case CompressNone:
		return "none"
	case CompressFP16:
		return "fp16"
	}
	return fmt.Sprintf("Compress(%d)", uint8(c))
}

// ParseCompress parses a --compress value: "none" (or "") or "fp16".
func ParseCompress(s string) (Compress, error) {
	switch s {
	case "", "none":
		return CompressNone, nil
	case "fp16":
		return CompressFP16, nil
	}
	return 0, fmt.Errorf("unknown compression %q (want none or fp16)", s)
}

// Config describes one rank's place in a TCP group. Every rank of a group
// is given the same Size, Rendezvous, Token and ModelHash, and its own
// Rank.
type Config struct {
	// Rank is this process's rank, in [0, Size).
	Rank int
	// Size is the number of ranks in the group.
	Size int
	// Rendezvous is the host:port where rank 0 listens while the group
	// assembles and where the other ranks find it. Not needed when Size
	// is 1.
	Rendezvous string
	// Listen is the host:port of this rank's data listener; default
	// DefaultListen (loopback, any free port). A host of 0.0.0.0 or ::
	// listens on every interface and is advertised with the address the
	// rendezvous saw.
	Listen string
	// Token is a secret shared by the group; a Hello with another token
	// is refused. It keeps strangers and other jobs out; it is sent in
	// clear and is no protection on an untrusted network.
	Token string
	// ModelHash identifies the parameter layout; ranks that disagree are
	// refused at the rendezvous.
	ModelHash uint64
	// Timeout bounds the rendezvous and the mesh set-up as a whole, and
	// every read or write of a message: a peer that makes no progress for
	// that long is reported as failed. It must exceed the longest
	// legitimate wait for a message (the slowest rank's step). Default
	// DefaultTimeout.
	Timeout time.Duration
	// MaxFrame bounds the payload of any message sent or accepted, in
	// bytes; a peer announcing more is an error naming it. Default
	// DefaultMaxFrame.
	MaxFrame int
	// Compress selects how float32 messages are sent.
	Compress Compress
	// Stream is the stream layer; nil means TCP{}.
	Stream StreamLayer
	// Shm says whether pairs of ranks on one host exchange data through
	// shared memory (ShmAuto, the default) or over TCP like any other
	// pair (ShmOff). See shm.go.
	Shm Shm
	// ShmDir is the directory of the shared-memory segments; default
	// shm.DefaultDir (/dev/shm).
	ShmDir string
	// ShmRing is the size in bytes of the ring of each direction of a
	// same-host pair, a power of two of at least 64 KiB; default
	// DefaultShmRing.
	ShmRing int
	// ShmSlot is the size in bytes of each rank's slot in the host group
	// that collectives use when every rank is on one host (group.go), a
	// multiple of 4 KiB; default DefaultShmSlot. Negative: no host group
	// (collectives go as messages through the pairs' rings).
	ShmSlot int

	host string // this rank's shared-memory host identity, "" for none
}

// validate fills in defaults and rejects impossible values.
func (c *Config) validate() error {
	if c.Size < 1 {
		return fmt.Errorf("tcp: group size %d, want at least 1", c.Size)
	}
	if c.Rank < 0 || c.Rank >= c.Size {
		return fmt.Errorf("tcp: rank %d out of range [0,%d)", c.Rank, c.Size)
	}
	if c.Size > 1 {
		if _, _, err := net.SplitHostPort(c.Rendezvous); err != nil {
			return fmt.Errorf("tcp: rendezvous address %q: %v (want host:port)", c.Rendezvous, err)
		}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if len(c.Token) > wire.MaxToken {
		return fmt.Errorf("tcp: token of %d bytes, limit %d", len(c.Token), wire.MaxToken)
	}
	if _, isTCP := c.Stream.(TCP); c.Token == "" && c.Size > 1 && (c.Stream == nil || isTCP) {
		if !netguard.IsLoopback(c.Listen) {
			return fmt.Errorf("tcp: rank %d listens on %s, beyond loopback, and needs a token (Config.Token): without one any host could join", c.Rank, c.Listen)
		}
		if c.Rank == 0 && !netguard.IsLoopback(c.Rendezvous) {
			return fmt.Errorf("tcp: the rendezvous on %s, beyond loopback, needs a token (Config.Token): without one any host could join", c.Rendezvous)
		}
	}
	if c.Timeout < 0 {
		return fmt.Errorf("tcp: negative timeout %v", c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxFrame < 0 {
		return fmt.Errorf("tcp: negative MaxFrame %d", c.MaxFrame)
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.Compress > CompressFP16 {
		return fmt.Errorf("tcp: unknown compression %v", c.Compress)
	}
	if c.Stream == nil {
		c.Stream = TCP{}
	}
	if c.Shm > ShmOff {
		return fmt.Errorf("tcp: unknown shared-memory mode %v", c.Shm)
	}
	if c.ShmRing == 0 {
		c.ShmRing = DefaultShmRing
	}
	if c.ShmRing < 64<<10 || c.ShmRing&(c.ShmRing-1) != 0 || c.ShmRing > 1<<30 {
		return fmt.Errorf("tcp: shared-memory ring of %d bytes: want a power of two from 64 KiB to 1 GiB", c.ShmRing)
	}
	if c.ShmSlot == 0 {
		c.ShmSlot = DefaultShmSlot
	}
	if c.ShmSlot > 0 && (c.ShmSlot%4096 != 0 || c.ShmSlot > 1<<30) {
		return fmt.Errorf("tcp: shared-memory slot of %d bytes: want a multiple of 4 KiB up to 1 GiB", c.ShmSlot)
	}
	return nil
}

// StreamLayer is what the transport needs from the network: a listener on
// an address and a way to dial one. The transport is written once over it;
// TCP is the one for real runs, and tests wrap it to inject faults.
type StreamLayer interface {
	// Listen listens on addr (host:port, port 0 for any free port).
	Listen(addr string) (net.Listener, error)
	// Dial connects to addr, giving up when ctx is done.
	Dial(ctx context.Context, addr string) (net.Conn, error)
}

// TCP is the default StreamLayer: TCP sockets with Nagle's algorithm off,
// so small control messages leave at once.
type TCP struct {
	// SocketBuffer, if positive, sets the kernel's send and receive
	// buffer sizes of every connection; zero leaves the kernel's
	// autotuning alone.
	SocketBuffer int
}

// Listen listens on the TCP address addr.
func (s TCP) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return tcpListener{ln, s}, nil
}

// Dial connects to the TCP address addr.
func (s TCP) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s.setup(c)
	return c, nil
}

func (s TCP) setup(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	tc.SetNoDelay(true)
	if s.SocketBuffer > 0 {
		tc.SetReadBuffer(s.SocketBuffer)
		tc.SetWriteBuffer(s.SocketBuffer)
	}
}

// tcpListener applies the TCP settings to accepted connections.
type tcpListener struct {
	net.Listener
	s TCP
}

func (l tcpListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.s.setup(c)
	}
	return c, err
}
