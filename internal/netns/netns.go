package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
)

// ErrUnavailable wraps the errors that mean network namespaces cannot be
// made on this machine at all: not root, no ip or tc, the kernel or a
// container refusing (EPERM), no tbf qdisc. Tests skip on it; a program
// reports it.
var ErrUnavailable = errors.New("network namespaces unavailable")

// Dev is the name of the veth end inside each namespace.
const Dev = "link0"

// Pair is two network namespaces ("hosts" 0 and 1) joined by a veth pair
// whose ends have the addresses Addr[0] and Addr[1].
type Pair struct {
	// NS are the namespaces' names, Addr the IPv4 address of each end.
	NS, Addr [2]string
	// Rate is the link's rate in bits per second, each way; Burst the
	// token bucket's depth in bytes (what passes at full speed after an
	// idle spell).
	Rate  float64
	Burst int
}

// Burst is the token bucket depth NewPair gives tbf: 64 KiB, one
// maximal TCP segment (veth passes GSO packets of up to 64 KiB, which tbf
// would otherwise split), and 0.5 ms at 1 Gbit/s, so the rate holds at
// every time scale the tests look at.
const Burst = 64 << 10

var serial atomic.Int64

// NewPair makes two namespaces named prefix-PID-N-a and -b, joined by a
// veth pair with addresses 10.231.0.1/24 and 10.231.0.2/24 (private to
// the pair: nothing else is in these namespaces), loopback up in each, and
// both ends' egress limited to rate bits per second by tbf. It first
// removes stale namespaces of prefix (see RemoveStale). On any error it
// removes what it made.
func NewPair(ctx context.Context, prefix string, rate float64) (*Pair, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if rate < 8e3 {
		return nil, fmt.Errorf("netns: rate %g bit/s is below tc's range", rate)
	}
	if _, err := RemoveStale(ctx, prefix); err != nil {
		return nil, err
	}
	base := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), serial.Add(1))
	p := &Pair{NS: [2]string{base + "-a", base + "-b"}, Addr: [2]string{"10.231.0.1", "10.231.0.2"}, Rate: rate, Burst: Burst}
	if err := p.build(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Pair) build(ctx context.Context) error {
	for _, ns := range p.NS {
		if err := run(ctx, "ip", "netns", "add", ns); err != nil {
			return err
		}
	}
	// Each end is made inside its namespace: no name is ever taken in
	// the caller's.
	if err := run(ctx, "ip", "link", "add", Dev, "netns", p.NS[0], "type", "veth", "peer", "name", Dev, "netns", p.NS[1]); err != nil {
		return err
	}
	rate := strconv.FormatFloat(p.Rate, 'f', 0, 64) + "bit"
	for h, ns := range p.NS {
		steps := [][]string{
			{"ip", "-n", ns, "addr", "add", p.Addr[h] + "/24", "dev", Dev},
			{"ip", "-n", ns, "link", "set", "lo", "up"},
			{"ip", "-n", ns, "link", "set", Dev, "up"},
			// latency bounds the queue: 50 ms of the rate, beyond which
			// tbf drops and TCP backs off, as a switch's buffer would.
			{"tc", "-n", ns, "qdisc", "add", "dev", Dev, "root", "tbf", "rate", rate, "burst", strconv.Itoa(p.Burst), "latency", "50ms"},
		}
		for _, s := range steps {
			if err := run(ctx, s[0], s[1:]...); err != nil {
				return err
			}
		}
	}
	return nil
}

// Command returns a command that runs name with args in host h's
// namespace (0 or 1), through ip netns exec; its environment is the
// caller's unless the caller sets Env.
func (p *Pair) Command(ctx context.Context, h int, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", p.NS[h], name}, args...)...)
}

// Close removes both namespaces (and with them the veth pair). Processes
// still running in one keep it alive until they exit; the caller stops
// them first.
func (p *Pair) Close() error {
	var errs []error
	for _, ns := range p.NS {
		if err := del(ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func del(ns string) error {
	if _, err := os.Stat("/run/netns/" + ns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return run(context.Background(), "ip", "netns", "del", ns)
}

// Counters is what the kernel counted on one end of the link: bytes out
// and in at the device, and what its tbf qdisc sent and how often it held
// a packet back for want of tokens.
type Counters struct {
	TxBytes, RxBytes  uint64
	QdiscBytes        uint64
	Overlimits, Drops uint64
	QdiscKind, Device string
	Namespace         string
}

// Counters reads host h's end of the link.
func (p *Pair) Counters(ctx context.Context, h int) (Counters, error) {
	c := Counters{Device: Dev, Namespace: p.NS[h]}
	out, err := output(ctx, "ip", "-n", p.NS[h], "-j", "-s", "link", "show", "dev", Dev)
	if err != nil {
		return c, err
	}
	var links []struct {
		Stats struct {
			Rx struct{ Bytes uint64 } `json:"rx"`
			Tx struct{ Bytes uint64 } `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		return c, fmt.Errorf("netns: ip -j -s link show in %s: %d links, %v", p.NS[h], len(links), err)
	}
	c.TxBytes, c.RxBytes = links[0].Stats.Tx.Bytes, links[0].Stats.Rx.Bytes
	out, err = output(ctx, "tc", "-n", p.NS[h], "-j", "-s", "qdisc", "show", "dev", Dev)
	if err != nil {
		return c, err
	}
	var qs []struct {
		Kind       string `json:"kind"`
		Root       bool   `json:"root"`
		Bytes      uint64 `json:"bytes"`
		Drops      uint64 `json:"drops"`
		Overlimits uint64 `json:"overlimits"`
	}
	if err := json.Unmarshal(out, &qs); err != nil {
		return c, fmt.Errorf("netns: tc -j -s qdisc show in %s: %v", p.NS[h], err)
	}
	for _, q := range qs {
		if q.Root {
			c.QdiscKind, c.QdiscBytes, c.Drops, c.Overlimits = q.Kind, q.Bytes, q.Drops, q.Overlimits
		}
	}
	return c, nil
}

// RemoveStale removes the namespaces named prefix-PID-N-a or -b whose
// process PID is gone, and returns their names.
func RemoveStale(ctx context.Context, prefix string) ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	var gone []string
	for _, e := range entries {
		pid, ok := ownerPID(e.Name(), prefix)
		if !ok || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			continue // its creator is alive
		}
		if err := del(e.Name()); err != nil {
			return gone, err
		}
		gone = append(gone, e.Name())
	}
	return gone, nil
}

// ownerPID parses PREFIX-PID-N-a or -b.
func ownerPID(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	if !ok {
		return 0, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 3 || (f[2] != "a" && f[2] != "b") {
		return 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	_, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// Available reports, as an error wrapping ErrUnavailable, why namespaces
// cannot be made here: not root, or no ip or tc.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (ip netns add needs CAP_SYS_ADMIN and CAP_NET_ADMIN)", ErrUnavailable)
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: no %s command (Debian iproute2)", ErrUnavailable, tool)
		}
	}
	return nil
}

// run runs a command, returning an error naming it and its output.
func run(ctx context.Context, name string, args ...string) error {
	_, err := output(ctx, name, args...)
	return err
}

func output(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	msg := strings.TrimSpace(stderr.String())
	err = fmt.Errorf("netns: %s %s: %v: %s", name, strings.Join(args, " "), err, msg)
	// The kernel (or a container's seccomp profile) refusing, or a
	// kernel without tbf: nothing on this machine can make the pair.
	for _, s := range []string{"Operation not permitted", "Permission denied", "Unknown qdisc", "qdisc kind is unknown", "Unknown device type", "not supported"} {
		if strings.Contains(msg, s) {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	return nil, err
}
