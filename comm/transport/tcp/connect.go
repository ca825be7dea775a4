package tcp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
	"unsafe"

	"dsgd/comm/netguard"
	"dsgd/comm/transport"
	"dsgd/comm/wire"
)

// maxControl bounds the payload of the welcome (every rank's address)
// that a rank reads from rank 0, which it dialed itself. A hello, read
// from a peer not yet authenticated, is bounded by wire.MaxHello.
const maxControl = 1 << 24

// Connect joins the group that cfg describes and returns this rank's
// Endpoint once every pair of ranks is connected.
//
// Rank 0 listens on cfg.Rendezvous; every other rank dials it (retrying
// until rank 0 is up) and says Hello. Rank 0 checks each Hello — token,
// protocol version, world size, rank range, duplicate ranks, model hash —
// and refuses a bad one with a Reject whose reason the refused rank
// returns as its error. A stranger with a wrong token is turned away and
// the rendezvous goes on; any other refusal means the group is
// misconfigured, so rank 0 also tells the ranks already waiting and every
// rank's Connect fails at once. When all ranks are in, rank 0 sends
// everyone the data addresses, and each rank dials every higher rank (one
// connection per pair, opened with an exchange of Hellos carrying the
// token). The whole set-up must finish within cfg.Timeout, or ctx's
// deadline if earlier.
func Connect(ctx context.Context, cfg Config) (transport.Endpoint, error) {
	if !littleEndian() {
		return nil, errors.New("tcp: this host is big-endian; the wire format and its zero-copy path assume little-endian")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.offerShm()
	if cfg.Size == 1 {
		return newEndpoint(&cfg, make([]net.Conn, 1)), nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	ln, err := cfg.Stream.Listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("tcp: rank %d cannot listen for data connections on %q: %v", cfg.Rank, cfg.Listen, err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var addrs []string
	if cfg.Rank == 0 {
		addrs, err = serveRendezvous(ctx, &cfg, ln.Addr().String())
	} else {
		addrs, err = joinRendezvous(ctx, &cfg, ln.Addr().String())
	}
	if err != nil {
		return nil, err
	}
	conns, hosts, err := buildMesh(ctx, &cfg, ln, addrs)
	if err != nil {
		return nil, err
	}
	links, err := setupShm(ctx, &cfg, conns, hosts)
	var grp *hostGroup
	if err == nil {
		grp, err = setupGroup(ctx, &cfg, conns, links)
		if err == nil && ctx.Err() != nil {
			// It ended as the set-up finished: the connections'
			// deadlines may have been forced into the past.
			err = fmt.Errorf("tcp: rank %d: setting up shared memory: %w", cfg.Rank, ctx.Err())
			if grp != nil {
				grp.seg.Close()
			}
		}
		if err != nil {
			for _, l := range links {
				if l != nil {
					l.seg.Close()
				}
			}
		}
	}
	if err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	e := newEndpoint(&cfg, conns)
	e.attachGroup(grp) // before attach starts the watchers, which wake it
	e.attach(links)
	return e, nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// failOnCancel makes every I/O on conns fail at once when ctx ends, by
// forcing their deadlines into the past, until the returned stop is
// called. stop waits for a forcing already under way, so that none
// lands once the caller has moved on; a caller that finds ctx ended
// after stop must not use the connections (Connect fails).
func failOnCancel(ctx context.Context, conns []net.Conn) (stop func()) {
	done := make(chan struct{})
	s := context.AfterFunc(ctx, func() {
		defer close(done)
		for _, c := range conns {
			if c != nil {
				c.SetDeadline(time.Unix(1, 0))
			}
		}
	})
	return func() {
		if !s() {
			<-done
		}
	}
}

// deadlineOf returns ctx's deadline; Connect always sets one.
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// writeControl sends m as a control frame.
func writeControl(c net.Conn, m wire.Control, deadline time.Time) error {
	b, err := m.AppendBinary(make([]byte, wire.HeaderSize, 128))
	if err != nil {
		return err
	}
	wire.PutHeader(b, wire.Header{Kind: wire.KindControl, Len: uint64(len(b) - wire.HeaderSize)})
	c.SetWriteDeadline(deadline)
	_, err = c.Write(b)
	return err
}

// readControl reads one control frame of at most limit payload bytes.
func readControl(c net.Conn, deadline time.Time, limit uint64) (wire.Control, error) {
	c.SetReadDeadline(deadline)
	var hdr [wire.HeaderSize]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return nil, err
	}
	h, err := wire.ParseHeader(hdr[:], limit)
	if err != nil {
		return nil, err
	}
	if h.Kind != wire.KindControl {
		return nil, fmt.Errorf("%w: %s frame during the set-up", wire.ErrMalformed, h.Kind)
	}
	b := make([]byte, h.Len)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	return wire.DecodeControl(b)
}

// connSet holds the connections of a set-up in progress, so that a
// cancelled or failed set-up closes every one of them.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// add adds c, or closes it and returns false if the set is closed.
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]bool{}
	}
	s.conns[c] = true
	return true
}

// keep removes c from the set: the caller keeps it open.
func (s *connSet) keep(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeAll closes every connection in the set and any added later.
func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func (c *Config) hello(listen string) wire.Hello {
	return wire.Hello{Version: wire.Version, Token: c.Token, Rank: c.Rank, Size: c.Size, ModelHash: c.ModelHash, ListenAddr: listen}
}

// dataHello is the Hello of a data connection: it offers shared memory
// with this rank's host identity, where Config.Shm allows.
func (c *Config) dataHello() wire.Hello {
	h := c.hello("")
	h.Host = c.host
	return h
}

// check returns why rank 0 (or a peer accepting a data connection) refuses
// h, or "" to accept it. fatal says the group cannot form: every rank is
// told, rather than waiting for a rank that will not come.
func (c *Config) check(h wire.Hello) (reason string, fatal bool) {
	switch {
	case subtle.ConstantTimeCompare([]byte(h.Token), []byte(c.Token)) != 1:
		return "bad token", false
	case h.Version != wire.Version:
		return fmt.Sprintf("protocol version mismatch: rank %d speaks version %d, rank %d version %d", h.Rank, h.Version, c.Rank, wire.Version), true
	case h.Size != c.Size:
		return fmt.Sprintf("world size mismatch: rank %d was started with size %d, rank %d with size %d", h.Rank, h.Size, c.Rank, c.Size), true
	case h.Rank < 0 || h.Rank >= c.Size:
		return fmt.Sprintf("rank %d out of range [0,%d)", h.Rank, c.Size), true
	case h.ModelHash != c.ModelHash:
		return fmt.Sprintf("model mismatch: rank %d has parameter layout %#016x, rank %d has %#016x", h.Rank, h.ModelHash, c.Rank, c.ModelHash), true
	}
	return "", false
}

// advertised returns the address other ranks dial for a rank listening
// on listen: an unspecified host (0.0.0.0, ::, empty) is replaced by the
// host seen, the address its rendezvous connection came from or went to.
func advertised(listen string, seen net.Addr) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return listen
	}
	seenHost, _, err := net.SplitHostPort(seen.String())
	if err != nil {
		return listen
	}
	return net.JoinHostPort(seenHost, port)
}

type joinAttempt struct {
	conn  net.Conn
	hello wire.Hello
	err   error
}

// serveRendezvous is rank 0's side of the rendezvous: it collects a Hello
// from every other rank and answers with the data addresses.
func serveRendezvous(ctx context.Context, cfg *Config, dataAddr string) ([]string, error) {
	ln, err := cfg.Stream.Listen(cfg.Rendezvous)
	if err != nil {
		return nil, fmt.Errorf("tcp: rank 0 cannot listen for the rendezvous on %q: %v", cfg.Rendezvous, err)
	}
	var set connSet
	defer set.closeAll()
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close(); set.closeAll() })
	defer stop()
	deadline := deadlineOf(ctx)
	attempts := make(chan joinAttempt)
	pending := netguard.NewPending(netguard.DefaultPending)
	go func() {
		for {
			// A burst of strangers that exhausts the file descriptors
			// pauses the rendezvous; it does not end it.
			c, err := netguard.Accept(ln, nil)
			if err != nil {
				return
			}
			if !set.add(c) {
				return
			}
			pending.Add(c)
			go func() {
				a := joinAttempt{conn: c}
				m, err := readControl(c, netguard.HelloDeadline(deadline), wire.MaxHello)
				if !pending.Done(c) && err == nil {
					err = errors.New("closed to make room: too many connections waiting to say hello")
				}
				if h, ok := m.(wire.Hello); ok {
					a.hello = h
				} else if err == nil {
					err = fmt.Errorf("sent %T instead of a Hello", m)
				}
				a.err = err
				select {
				case attempts <- a:
				case <-ctx.Done():
				}
			}()
		}
	}()

	addrs := make([]string, cfg.Size)
	addrs[0] = dataAddr
	members := make([]net.Conn, cfg.Size)
	var turnedAway []string // strangers, for the timeout message
	// abort tells every rank that has joined why the group cannot form.
	abort := func(reason string) {
		for _, c := range members {
			if c != nil {
				writeControl(c, wire.Reject{Reason: reason}, time.Now().Add(time.Second))
			}
		}
	}
	for joined := 1; joined < cfg.Size; {
		select {
		case a := <-attempts:
			from := a.conn.RemoteAddr().String()
			if a.err != nil {
				turnedAway = append(turnedAway, fmt.Sprintf("%s: %v", from, a.err))
				a.conn.Close()
				continue
			}
			h := a.hello
			reason, fatal := cfg.check(h)
			if reason == "" && h.Rank == 0 {
				reason, fatal = fmt.Sprintf("rank 0 is this rendezvous host (%s)", cfg.Rendezvous), true
			}
			if reason == "" && members[h.Rank] != nil {
				reason, fatal = fmt.Sprintf("duplicate rank %d: already claimed by %s", h.Rank, members[h.Rank].RemoteAddr()), true
			}
			if reason != "" {
				writeControl(a.conn, wire.Reject{Reason: reason}, deadline)
				a.conn.Close()
				if fatal {
					abort(fmt.Sprintf("rendezvous aborted: %s claiming rank %d was refused: %s", from, h.Rank, reason))
					return nil, fmt.Errorf("tcp: rank 0 refused %s claiming rank %d: %s", from, h.Rank, reason)
				}
				turnedAway = append(turnedAway, fmt.Sprintf("%s claiming rank %d: %s", from, h.Rank, reason))
				continue
			}
			members[h.Rank] = a.conn
			addrs[h.Rank] = advertised(h.ListenAddr, a.conn.RemoteAddr())
			joined++
		case <-ctx.Done():
			var missing []int
			for r := 1; r < cfg.Size; r++ {
				if members[r] == nil {
					missing = append(missing, r)
				}
			}
			reason := fmt.Sprintf("rendezvous at %s: ranks %v never joined (%v)", cfg.Rendezvous, missing, ctx.Err())
			abort(reason)
			if len(turnedAway) > 0 {
				reason += "; turned away: " + strings.Join(turnedAway, "; ")
			}
			return nil, fmt.Errorf("tcp: rank 0: %s", reason)
		}
	}
	for r, c := range members {
		if c == nil {
			continue
		}
		if err := writeControl(c, wire.Welcome{Addrs: addrs}, deadline); err != nil {
			abort(fmt.Sprintf("rendezvous aborted: rank %d left before the welcome", r))
			return nil, fmt.Errorf("tcp: rank 0: sending the welcome to rank %d: %v", r, err)
		}
	}
	return addrs, nil
}

// joinRendezvous is the side of every rank but 0: say Hello to rank 0,
// get the data addresses of all ranks.
func joinRendezvous(ctx context.Context, cfg *Config, dataAddr string) ([]string, error) {
	c, err := dialRetry(ctx, cfg.Stream, cfg.Rendezvous)
	if err != nil {
		return nil, fmt.Errorf("tcp: rank %d could not reach rank 0 at the rendezvous %s: %v", cfg.Rank, cfg.Rendezvous, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	deadline := deadlineOf(ctx)
	if err := writeControl(c, cfg.hello(dataAddr), deadline); err != nil {
		return nil, fmt.Errorf("tcp: rank %d: saying hello at the rendezvous %s: %v", cfg.Rank, cfg.Rendezvous, err)
	}
	m, err := readControl(c, deadline, maxControl)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%v while waiting for the other ranks", ctx.Err())
		}
		return nil, fmt.Errorf("tcp: rank %d: no answer from rank 0 at the rendezvous %s: %v", cfg.Rank, cfg.Rendezvous, err)
	}
	switch m := m.(type) {
	case wire.Reject:
		return nil, fmt.Errorf("tcp: rank %d refused by rank 0 at %s: %s", cfg.Rank, cfg.Rendezvous, m.Reason)
	case wire.Welcome:
		if len(m.Addrs) != cfg.Size {
			return nil, fmt.Errorf("tcp: rank %d: welcome from rank 0 lists %d addresses for %d ranks", cfg.Rank, len(m.Addrs), cfg.Size)
		}
		m.Addrs[0] = advertised(m.Addrs[0], c.RemoteAddr())
		return m.Addrs, nil
	}
	return nil, fmt.Errorf("tcp: rank %d: rank 0 answered with %T", cfg.Rank, m)
}

// dialRetry dials addr until it answers or ctx is done: the other side may
// not be listening yet.
func dialRetry(ctx context.Context, s StreamLayer, addr string) (net.Conn, error) {
	wait := 10 * time.Millisecond
	for {
		c, err := s.Dial(ctx, addr)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%v (last attempt: %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

type meshResult struct {
	rank int
	conn net.Conn
	host string // the peer's Hello.Host
	err  error  // fatal to the set-up
	note string
}

// buildMesh connects this rank to every other: it dials the higher ranks
// and accepts the lower ones on ln. The connections are returned by rank,
// with the host identity each peer offered for shared memory.
func buildMesh(ctx context.Context, cfg *Config, ln net.Listener, addrs []string) ([]net.Conn, []string, error) {
	var set connSet
	defer set.closeAll()
	stop := context.AfterFunc(ctx, set.closeAll)
	defer stop()
	deadline := deadlineOf(ctx)
	results := make(chan meshResult)
	report := func(r meshResult) {
		select {
		case results <- r:
		case <-ctx.Done():
		}
	}
	if cfg.Rank > 0 {
		pending := netguard.NewPending(netguard.DefaultPending)
		go func() {
			for {
				c, err := netguard.Accept(ln, nil)
				if err != nil {
					return
				}
				if !set.add(c) {
					return
				}
				pending.Add(c)
				go func() { report(acceptPeer(cfg, c, deadline, pending)) }()
			}
		}()
	}
	for r := cfg.Rank + 1; r < cfg.Size; r++ {
		go func() {
			c, err := cfg.Stream.Dial(ctx, addrs[r])
			if err != nil {
				report(meshResult{rank: r, err: fmt.Errorf("dialing rank %d at %s: %v", r, addrs[r], err)})
				return
			}
			if !set.add(c) {
				return
			}
			report(dialPeer(cfg, c, r, deadline))
		}()
	}
	conns := make([]net.Conn, cfg.Size)
	hosts := make([]string, cfg.Size)
	var notes []string
	for need := cfg.Size - 1; need > 0; {
		select {
		case res := <-results:
			switch {
			case res.err != nil:
				return nil, nil, fmt.Errorf("tcp: rank %d connecting to its peers: %v", cfg.Rank, res.err)
			case res.conn == nil:
				notes = append(notes, res.note)
			case conns[res.rank] != nil:
				res.conn.Close()
				notes = append(notes, fmt.Sprintf("second connection claiming rank %d refused", res.rank))
			default:
				conns[res.rank] = res.conn
				hosts[res.rank] = res.host
				need--
			}
		case <-ctx.Done():
			var missing []int
			for r := range conns {
				if r != cfg.Rank && conns[r] == nil {
					missing = append(missing, r)
				}
			}
			msg := fmt.Sprintf("tcp: rank %d: no data connection from ranks %v (%v)", cfg.Rank, missing, ctx.Err())
			if len(notes) > 0 {
				msg += "; " + strings.Join(notes, "; ")
			}
			return nil, nil, errors.New(msg)
		}
	}
	if !stop() {
		return nil, nil, fmt.Errorf("tcp: rank %d: %v as the connections completed", cfg.Rank, ctx.Err())
	}
	for _, c := range conns {
		if c != nil {
			set.keep(c)
		}
	}
	return conns, hosts, nil
}

// dialPeer opens the data connection to rank r: Hello both ways.
func dialPeer(cfg *Config, c net.Conn, r int, deadline time.Time) meshResult {
	fail := func(format string, args ...any) meshResult {
		c.Close()
		return meshResult{rank: r, err: fmt.Errorf(format, args...)}
	}
	if err := writeControl(c, cfg.dataHello(), deadline); err != nil {
		return fail("saying hello to rank %d: %v", r, err)
	}
	m, err := readControl(c, deadline, wire.MaxHello)
	if err != nil {
		return fail("no hello back from rank %d at %s: %v", r, c.RemoteAddr(), err)
	}
	switch m := m.(type) {
	case wire.Reject:
		return fail("rank %d at %s refused the connection: %s", r, c.RemoteAddr(), m.Reason)
	case wire.Hello:
		if reason, _ := cfg.check(m); reason != "" {
			return fail("rank %d at %s: %s", r, c.RemoteAddr(), reason)
		}
		if m.Rank != r {
			return fail("%s answered as rank %d, want rank %d", c.RemoteAddr(), m.Rank, r)
		}
		return meshResult{rank: r, conn: c, host: m.Host}
	}
	return fail("rank %d answered with %T", r, m)
}

// acceptPeer checks a data connection from a lower rank and says Hello
// back. A refused connection is closed and noted, not fatal: it may be a
// stranger.
func acceptPeer(cfg *Config, c net.Conn, deadline time.Time, pending *netguard.Pending) meshResult {
	from := c.RemoteAddr().String()
	m, err := readControl(c, netguard.HelloDeadline(deadline), wire.MaxHello)
	if !pending.Done(c) && err == nil {
		err = errors.New("closed to make room: too many connections waiting to say hello")
	}
	h, ok := m.(wire.Hello)
	if err != nil || !ok {
		c.Close()
		return meshResult{note: fmt.Sprintf("%s sent no hello: %v", from, err)}
	}
	reason, _ := cfg.check(h)
	if reason == "" && h.Rank >= cfg.Rank {
		reason = fmt.Sprintf("rank %d must wait for rank %d to connect", cfg.Rank, h.Rank)
	}
	if reason != "" {
		writeControl(c, wire.Reject{Reason: reason}, deadline)
		c.Close()
		return meshResult{note: fmt.Sprintf("%s claiming rank %d refused: %s", from, h.Rank, reason)}
	}
	if err := writeControl(c, cfg.dataHello(), deadline); err != nil {
		c.Close()
		return meshResult{note: fmt.Sprintf("%s claiming rank %d: %v", from, h.Rank, err)}
	}
	return meshResult{rank: h.Rank, conn: c, host: h.Host}
}
