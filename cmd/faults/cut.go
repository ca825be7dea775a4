package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// syncLinkCut: of 3 sync-ring ranks over TCP alone (no shared memory),
// the link between ranks 1 and 2 is cut while they train: both processes
// live on, but the packets of their one connection no longer cross. The
// ranks run in a network namespace of their own, whose loopback steers
// that connection's packets (tc: a u32 filter on its two ports) into an
// htb class that passes one byte a second through a one-packet queue:
// silence, with no reset. The run must end non-zero within 1.5 ×
// --comm-timeout (the README's bound) with rank 0's error naming rank 1
// or 2, the ranks on the cut link, never rank 0. Deleting the namespace
// takes the filter, the queue and every socket with it.
func syncLinkCut(h *harness, dir string) string {
	const timeout = 4 * time.Second
	ns := fmt.Sprintf("dsgd-faults-cut-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns add (the case needs root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Sprintf("ip link set lo up: %v: %s", err, out)
	}
	args := []string{"netns", "exec", ns, h.exe, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--test-interval", "0",
		"--transport", "tcp", "--workers", "3", "--scheme", "sync-ring", "--shm", "off", "--comm-timeout", timeout.String()}
	p := h.startCmd(dir, nil, exec.Command("ip", args...))
	defer p.stop()
	if !p.waitFor("  loss ", 40*time.Second) {
		return "no progress: " + lastLines(p.out.String())
	}
	pid1, pid2 := rankPid(p.cmd.Process.Pid, 1), rankPid(p.cmd.Process.Pid, 2)
	if pid1 == 0 || pid2 == 0 {
		return "ranks not found"
	}
	a, b, why := link(ns, pid1, pid2)
	if why != "" {
		return why
	}
	t0 := time.Now()
	if why := cutPorts(ns, a, b); why != "" {
		return why
	}
	code := p.wait(timeout*3/2 + 4*time.Second)
	out := p.out.String()
	msg, i := rankError(out, 0)
	switch {
	case code == -1:
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		return fmt.Sprintf("still running %v after the link 1-2 was cut: %s", time.Since(t0).Round(time.Second), lastLines(out))
	case code == 0:
		return "exit 0 with a cut link"
	case i < 0:
		return "rank 0's error is not reported: " + lastLines(out)
	}
	if !strings.Contains(msg, "rank 1") && !strings.Contains(msg, "rank 2") || strings.Contains(msg, "from rank 0") {
		return "rank 0's error does not name rank 1 or 2: " + msg
	}
	if why := h.detect(p, t0, msg); why != "" {
		return why
	}
	if h.detected > timeout*3/2+time.Second {
		return fmt.Sprintf("named after %v, beyond 1.5 × --comm-timeout %v", h.detected.Round(100*time.Millisecond), timeout)
	}
	return crashed(out)
}

// sockLine is one established socket of ss -tnpH: local and peer ports
// and the owning pid.
var sockLine = regexp.MustCompile(`127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:(\d+)\s+users:\(\("[^"]*",pid=(\d+),`)

// link returns the ports of the TCP connection between pids p1 and p2 in
// namespace ns, or why none was found.
func link(ns string, p1, p2 int) (a, b string, why string) {
	out, err := exec.Command("ip", "netns", "exec", ns, "ss", "-tnpH", "state", "established").CombinedOutput()
	if err != nil {
		return "", "", fmt.Sprintf("ss: %v: %s", err, out)
	}
	own := map[string]int{} // local port -> pid
	type sock struct {
		local, peer string
		pid         int
	}
	var socks []sock
	for _, m := range sockLine.FindAllStringSubmatch(string(out), -1) {
		var pid int
		fmt.Sscan(m[3], &pid)
		own[m[1]] = pid
		socks = append(socks, sock{m[1], m[2], pid})
	}
	for _, s := range socks {
		if s.pid == p1 && own[s.peer] == p2 {
			return s.local, s.peer, ""
		}
	}
	return "", "", "no connection between ranks 1 and 2 in: " + string(out)
}

// cutPorts steers the packets between ports a and b of ns's loopback
// into a class that passes one byte a second through a one-packet queue.
func cutPorts(ns, a, b string) string {
	for _, c := range [][]string{
		{"qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "1", "r2q", "1000000"},
		{"class", "add", "dev", "lo", "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit"},
		{"class", "add", "dev", "lo", "parent", "1:", "classid", "1:2", "htb", "rate", "8bit", "ceil", "8bit", "burst", "1", "cburst", "1"},
		{"qdisc", "add", "dev", "lo", "parent", "1:2", "handle", "20:", "pfifo", "limit", "1"},
		{"filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "sport", a, "0xffff", "match", "ip", "dport", b, "0xffff", "flowid", "1:2"},
		{"filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "sport", b, "0xffff", "match", "ip", "dport", a, "0xffff", "flowid", "1:2"},
	} {
		if out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "tc"}, c...)...).CombinedOutput(); err != nil {
			return fmt.Sprintf("tc %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return ""
}
