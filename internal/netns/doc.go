// Package netns builds a two-host network on one Linux machine: two
// network namespaces joined by a veth pair, each end's egress rate-limited
// by a token bucket (tc's tbf qdisc), so that processes started in each
// namespace talk over a link of a chosen rate as ranks on two hosts would.
// dsgd's two-host test runs its ranks there.
//
//	p, err := netns.NewPair(ctx, "dsgd", 1e9) // 1 Gbit/s each way
//	if errors.Is(err, netns.ErrUnavailable) { ... } // not root, no ip, EPERM
//	defer p.Close()
//	cmd := p.Command(ctx, 0, "/path/to/dsgd", "worker", ...) // on host 0, address p.Addr[0]
//
// It needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2's ip and
// tc, and runs them as commands. The namespaces are named
// PREFIX-PID-N-a and -b after the creating process, and removed by Close;
// NewPair first removes those of the same prefix whose creator is dead
// (a test run killed before its cleanup).
package netns
