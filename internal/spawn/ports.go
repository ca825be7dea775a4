package spawn

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

// LoopbackAddrs returns n distinct free loopback addresses for a group on
// this host to meet at (a rendezvous, a center). A child listens there,
// so the address must be picked before it starts: each is checked free
// by listening on it, and all n are held open at once, so none is handed
// out twice.
//
// A port is released before its child binds it, so the ports are drawn
// at random from outside the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range): the kernel takes every
// port-0 listener's and every outgoing connection's port from inside it,
// and a port from there, once released, can go to any socket on the host
// before the child binds it ("address already in use", seen under
// load). Outside it, only an explicit bind of that same port can take
// it. Where the range leaves no room, or no port there is free, the
// kernel picks (a port from the range, as before).
func LoopbackAddrs(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	var addrs []string
	lo, hi := ephemeralRange()
	for range n {
		l := listenOutside(lo, hi)
		if l == nil {
			var err error
			if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				return nil, err
			}
		}
		lns = append(lns, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// minFixedPort is the lowest port LoopbackAddrs draws: below it lie most
// services' registered ports.
const minFixedPort = 20000

// listenOutside listens on a random loopback port from [minFixedPort,
// 65535] outside the ephemeral range [lo, hi], or returns nil when it
// finds none free in a few tries.
func listenOutside(lo, hi int) net.Listener {
	below := max(lo-minFixedPort, 0) // [minFixedPort, lo)
	above := max(65535-max(hi, minFixedPort-1), 0)
	if below+above == 0 {
		return nil
	}
	for range 32 {
		i := rand.IntN(below + above)
		port := minFixedPort + i
		if i >= below {
			port = max(hi, minFixedPort-1) + 1 + i - below
		}
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			return l
		}
	}
	return nil
}

// ephemeralRange is the kernel's range of automatically assigned ports:
// Linux's setting, or its default where it cannot be read.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var a, z int
	if k, err := fmt.Sscan(string(b), &a, &z); err == nil && k == 2 && 0 < a && a <= z && z <= 65535 {
		return a, z
	}
	return lo, hi
}
