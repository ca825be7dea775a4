package spawn

import (
	"net"
	"strconv"
	"testing"
)

// TestLoopbackAddrsOutsideEphemeral: the ports handed out lie outside the
// kernel's ephemeral range, so a port-0 listener or an outgoing
// connection elsewhere cannot take one between its release and the
// child's bind.
func TestLoopbackAddrsOutsideEphemeral(t *testing.T) {
	lo, hi := ephemeralRange()
	if lo-minFixedPort <= 0 && 65535-hi <= 0 {
		t.Skipf("the ephemeral range %d-%d leaves no port outside it", lo, hi)
	}
	a, err := LoopbackAddrs(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, addr := range a {
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if host != "127.0.0.1" || port < minFixedPort || (lo <= port && port <= hi) || seen[addr] {
			t.Errorf("%s: want a distinct loopback port from %d up, outside %d-%d", addr, minFixedPort, lo, hi)
		}
		seen[addr] = true
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s is not free once returned: %v", addr, err)
			continue
		}
		l.Close()
	}
}

func TestListenOutside(t *testing.T) {
	for _, c := range []struct {
		lo, hi   int
		min, max int // the ports allowed; 0, 0 for none
	}{
		{32768, 60999, minFixedPort, 65535}, // Linux's default
		{1024, 65535, 0, 0},                 // the whole range is ephemeral
		{minFixedPort, 60999, 61000, 65535}, // room only above
		{30000, 65535, minFixedPort, 29999}, // room only below
		{1024, 40000, 40001, 65535},         // the range starts under minFixedPort
	} {
		for range 20 {
			l := listenOutside(c.lo, c.hi)
			if c.max == 0 {
				if l != nil {
					l.Close()
					t.Fatalf("range %d-%d: listened on %v; want no port", c.lo, c.hi, l.Addr())
				}
				continue
			}
			if l == nil {
				t.Fatalf("range %d-%d: no port found", c.lo, c.hi)
			}
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			if port < c.min || port > c.max || (c.lo <= port && port <= c.hi) {
				t.Fatalf("range %d-%d: port %d; want %d-%d outside the range", c.lo, c.hi, port, c.min, c.max)
			}
		}
	}
}
