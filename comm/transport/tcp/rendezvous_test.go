package tcp

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/wire"
)

// TestRendezvousRejects misconfigures one rank of a group of three: that
// rank's Connect fails saying why, and no other Connect hangs.
func TestRendezvousRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(cfgs []Config)
		// refused is the index of the config that must fail with msg;
		// -1: one of dup must, the other must fail somehow.
		refused int
		dup     [2]int
		msg     string
		// rank0 is a fragment of rank 0's error.
		rank0 string
	}{
		{
			name:    "WrongToken",
			edit:    func(c []Config) { c[2].Token = "guess" },
			refused: 2, msg: "tcp: rank 2 refused by rank 0 at 127.0.0.1:",
			rank0: "ranks [2] never joined",
		},
		{
			name:    "WorldSize",
			edit:    func(c []Config) { c[2].Size = 4 },
			refused: 2, msg: "world size mismatch: rank 2 was started with size 4, rank 0 with size 3",
			rank0: "world size mismatch",
		},
		{
			name:    "DuplicateRank",
			edit:    func(c []Config) { c[2].Rank = 1 },
			refused: -1, dup: [2]int{1, 2}, msg: "duplicate rank 1: already claimed by 127.0.0.1:",
			rank0: "duplicate rank 1",
		},
		{
			name:    "ModelHash",
			edit:    func(c []Config) { c[2].ModelHash = 0xbb },
			refused: 2, msg: "model mismatch: rank 2 has parameter layout 0x00000000000000bb, rank 0 has 0x0000000000000abc",
			rank0: "model mismatch",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := groupConfigs(t, 3, CompressNone)
			for i := range cfgs {
				cfgs[i].Timeout = time.Second
			}
			tc.edit(cfgs)
			start := time.Now()
			eps, errs := connectAll(context.Background(), cfgs)
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Connects took %v with a 1s timeout", d)
			}
			for i, ep := range eps {
				if ep != nil {
					ep.Close()
					t.Errorf("config %d connected", i)
				}
				if errs[i] == nil {
					t.Fatalf("config %d: no error", i)
				}
			}
			if tc.refused >= 0 {
				if !strings.Contains(errs[tc.refused].Error(), tc.msg) {
					t.Errorf("refused rank: %v\nwant it to contain %q", errs[tc.refused], tc.msg)
				}
			} else {
				// The second claimant is refused; the first is told the
				// rendezvous was aborted, and why.
				a, b := errs[tc.dup[0]].Error(), errs[tc.dup[1]].Error()
				if strings.Contains(a, "aborted") {
					a, b = b, a
				}
				if !strings.Contains(a, tc.msg) || strings.Contains(a, "aborted") || !strings.Contains(b, "rendezvous aborted") {
					t.Errorf("want one claimant refused with %q, the other aborted:\n%s\n%s", tc.msg, a, b)
				}
			}
			if !strings.Contains(errs[0].Error(), tc.rank0) {
				t.Errorf("rank 0: %v\nwant it to contain %q", errs[0], tc.rank0)
			}
			for i, err := range errs {
				t.Logf("config %d: %v", i, err)
			}
		})
	}
}

// rawHello connects to the rendezvous at addr as a hand-made rank and
// returns rank 0's answer.
func rawHello(t *testing.T, addr string, h wire.Hello) wire.Control {
	t.Helper()
	var c net.Conn
	var err error
	for range 100 {
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(testTimeout)
	if err := writeControl(c, h, deadline); err != nil {
		t.Fatal(err)
	}
	m, err := readControl(c, deadline, maxControl)
	if err != nil {
		t.Fatalf("no answer to %+v: %v", h, err)
	}
	return m
}

// TestRendezvousRawHellos speaks to rank 0 directly with Hellos no Config
// can produce.
func TestRendezvousRawHellos(t *testing.T) {
	tests := []struct {
		name string
		edit func(h *wire.Hello)
		msg  string
	}{
		{"Version", func(h *wire.Hello) { h.Version = 9 }, "protocol version mismatch: rank 1 speaks version 9, rank 0 version 1"},
		{"RankRange", func(h *wire.Hello) { h.Rank = 7 }, "rank 7 out of range [0,2)"},
		{"RankZero", func(h *wire.Hello) { h.Rank = 0 }, "rank 0 is this rendezvous host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := groupConfigs(t, 2, CompressNone)
			errc := make(chan error, 1)
			go func() {
				ep, err := Connect(context.Background(), cfgs[0])
				if ep != nil {
					ep.Close()
				}
				errc <- err
			}()
			h := cfgs[1].hello("127.0.0.1:1")
			tc.edit(&h)
			m := rawHello(t, cfgs[0].Rendezvous, h)
			if r, ok := m.(wire.Reject); !ok || !strings.Contains(r.Reason, tc.msg) {
				t.Fatalf("answer %#v, want a Reject containing %q", m, tc.msg)
			}
			if err := <-errc; err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("rank 0: %v", err)
			}
		})
	}
}

// TestRendezvousStrangers sends garbage and a wrong token to the
// rendezvous before the real ranks join: the group still forms.
func TestRendezvousStrangers(t *testing.T) {
	cfgs := groupConfigs(t, 3, CompressNone)
	type result struct {
		i   int
		err error
	}
	results := make(chan result, 3)
	go func() {
		ep, err := Connect(context.Background(), cfgs[0])
		if ep != nil {
			defer ep.Close()
		}
		results <- result{0, err}
	}()
	h := cfgs[1].hello("127.0.0.1:1")
	h.Token = "nope"
	if m := rawHello(t, cfgs[0].Rendezvous, h); m != (wire.Reject{Reason: "bad token"}) {
		t.Fatalf("wrong token answered with %#v", m)
	}
	c, err := net.Dial("tcp", cfgs[0].Rendezvous)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	defer c.Close()
	eps, errs := connectAll(context.Background(), cfgs[1:])
	for i, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", i+1, err)
		} else {
			defer eps[i].Close()
		}
	}
	if r := <-results; r.err != nil {
		t.Errorf("rank 0: %v", r.err)
	}
}

// slowDial delays every Dial.
type slowDial struct {
	StreamLayer
	d time.Duration
}

func (s slowDial) Dial(ctx context.Context, addr string) (net.Conn, error) {
	time.Sleep(s.d)
	return s.StreamLayer.Dial(ctx, addr)
}

// TestMeshStranger connects to a rank's data listener with a wrong token
// while the mesh forms: it is refused and the mesh completes.
func TestMeshStranger(t *testing.T) {
	cfgs := groupConfigs(t, 2, CompressNone)
	// Rank 1 listens on a known port (opened in advance, handed to it by
	// its stream layer; it only dials the rendezvous) so the stranger can
	// find it, and rank 0 dials it late so the stranger comes first.
	data := reserve(t)
	cfgs[1].Listen, cfgs[1].Stream = data.Addr(), data
	cfgs[0].Stream = slowDial{cfgs[0].Stream, 300 * time.Millisecond}
	done := make(chan struct{})
	var eps []transport.Endpoint
	var errs []error
	go func() {
		eps, errs = connectAll(context.Background(), cfgs)
		close(done)
	}()
	var (
		c   net.Conn
		err error
	)
	for range 200 {
		if c, err = net.Dial("tcp", cfgs[1].Listen); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := cfgs[0].hello("")
	h.Token = "nope"
	deadline := time.Now().Add(testTimeout)
	writeControl(c, h, deadline)
	m, err := readControl(c, deadline, maxControl)
	if r, ok := m.(wire.Reject); !ok || r.Reason != "bad token" {
		t.Fatalf("stranger answered with %#v, %v", m, err)
	}
	<-done
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		} else {
			eps[r].Close()
		}
	}
}

// TestRendezvousCancel cancels a waiting rendezvous: every Connect
// returns.
func TestRendezvousCancel(t *testing.T) {
	cfgs := groupConfigs(t, 3, CompressNone)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, errs := connectAll(ctx, cfgs[:2]) // rank 2 never comes
	if d := time.Since(start); d >= testTimeout {
		t.Fatalf("cancelled Connects took %v, as long as the configured timeout", d)
	}
	for i, err := range errs {
		if err == nil {
			t.Fatalf("rank %d connected", i)
		}
	}
	if !strings.Contains(errs[0].Error(), "ranks [2] never joined") {
		t.Errorf("rank 0: %v", errs[0])
	}
}

// TestRendezvousUnreachable: with no rank 0, a rank fails within its
// Timeout, naming the address.
func TestRendezvousUnreachable(t *testing.T) {
	cfgs := groupConfigs(t, 2, CompressNone)
	cfgs[1].Timeout = 200 * time.Millisecond
	cfgs[1].Stream = TCP{} // nobody listens on the reserved address through it
	cfgs[1].Rendezvous = "127.0.0.1:1"
	_, err := Connect(context.Background(), cfgs[1])
	if err == nil || !strings.Contains(err.Error(), "could not reach rank 0 at the rendezvous 127.0.0.1:1") {
		t.Fatalf("%v", err)
	}
}
