package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"dsgd/internal/spawn"
)

// A faultCase is one row of the matrix. check returns "" when dsgd
// behaved as expected, else what it did instead.
type faultCase struct {
	name, expect string
	limit        time.Duration
	check        func(h *harness, dir string) string
}

// harness runs the cases: the dsgd binary and a scratch directory.
type harness struct {
	exe, tmp string
	n        int
	// detected is the running case's detection latency: the time from
	// its fault to the first message that names it (0: not measured).
	detected time.Duration
}

// detect records the running case's detection latency: how long after t0
// p's output named the fault (one of subs). It returns why not, "" when
// it did.
func (h *harness) detect(p *proc, t0 time.Time, subs ...string) string {
	d := p.out.detectedSince(t0, subs...)
	if d < 0 {
		return fmt.Sprintf("no message naming the fault (%q) after it", subs)
	}
	h.detected = d
	return ""
}

// run runs c in a fresh directory holding the tiny net and solver, within
// its time limit; a panic of the check itself is a failure too.
func (h *harness) run(c faultCase) (outcome string) {
	h.n++
	h.detected = 0
	dir := filepath.Join(h.tmp, fmt.Sprintf("%02d", h.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err.Error()
	}
	os.WriteFile(filepath.Join(dir, "net.prototxt"), []byte(tinyNet), 0o644)
	os.WriteFile(filepath.Join(dir, "solver.prototxt"), []byte(tinySolver), 0o644)
	done := make(chan string, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Sprintf("the check panicked: %v", p)
			}
		}()
		done <- c.check(h, dir)
	}()
	select {
	case o := <-done:
		return o
	case <-time.After(c.limit):
		return fmt.Sprintf("still running after %v", c.limit)
	}
}

// proc is a dsgd process started by a case.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// ends and at record, per write, the buffer's length after it and
	// when it came: detectedSince reads them.
	ends []int
	at   []time.Time
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	s.ends, s.at = append(s.ends, s.b.Len()), append(s.at, time.Now())
	return n, err
}

// detectedSince returns how long after t0 the output written since t0
// first contained one of subs, or -1 if it never did.
func (s *syncBuffer) detectedSince(t0 time.Time, subs ...string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := 0 // the first byte written at or after t0
	for i, at := range s.at {
		if !at.Before(t0) {
			break
		}
		start = s.ends[i]
	}
	text := s.b.String()[start:]
	first := -1
	for _, sub := range subs {
		if i := strings.Index(text, sub); i >= 0 && (first < 0 || i+len(sub) < first) {
			first = i + len(sub)
		}
	}
	if first < 0 {
		return -1
	}
	for i, end := range s.ends {
		if end >= start+first {
			return s.at[i].Sub(t0)
		}
	}
	return -1
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs dsgd args in dir, in a process group of its own (as a shell
// job is), with env added to the environment.
func (h *harness) start(dir string, env []string, args ...string) *proc {
	return h.startCmd(dir, env, exec.Command(h.exe, args...))
}

func (h *harness) startCmd(dir string, env []string, cmd *exec.Cmd) *proc {
	p := &proc{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "DSGD_GRACE=20s"), env...)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.err = err
		close(p.done)
		return p
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p
}

// stop kills the process group if it still runs.
// rankOnceTraining waits for p's first loss line and returns the pid of
// its child rank r, or why not ("" when found).
func (p *proc) rankOnceTraining(r int) (int, string) {
	if !p.waitFor("  loss ", 40*time.Second) {
		return 0, "no progress: " + lastLines(p.out.String())
	}
	pid := rankPid(p.cmd.Process.Pid, r)
	if pid == 0 {
		return 0, fmt.Sprintf("rank %d not found", r)
	}
	return pid, ""
}

// killRank SIGKILLs p's child rank r once p trains, waits up to limit
// for p to exit, and returns when the kill was, p's exit status (-1: it
// did not exit in time) and its output, or why the rank was not killed.
func (p *proc) killRank(r int, limit time.Duration) (t0 time.Time, code int, out, why string) {
	pid, why := p.rankOnceTraining(r)
	if why != "" {
		return t0, -1, p.out.String(), why
	}
	t0 = time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	code = p.wait(limit)
	return t0, code, p.out.String(), ""
}

func (p *proc) stop() {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// wait waits up to limit for the process and returns its exit status
// (-1 when it did not exit in time).
func (p *proc) wait(limit time.Duration) int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		return -1
	}
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// waitFor waits up to limit for the output to contain s.
func (p *proc) waitFor(s string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if strings.Contains(p.out.String(), s) {
			return true
		}
		if !p.running() {
			return strings.Contains(p.out.String(), s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// dsgd runs dsgd args in dir to completion (within limit) and returns the
// exit status and everything it printed.
func (h *harness) dsgd(dir string, limit time.Duration, args ...string) (int, string) {
	p := h.start(dir, nil, args...)
	code := p.wait(limit)
	if code == -1 {
		p.stop()
	}
	return code, p.out.String()
}

// crashed says how out shows a crash (a panic, a fatal runtime error), or "".
func crashed(out string) string {
	for _, s := range []string{"panic:", "fatal error:", "goroutine "} {
		if strings.Contains(out, s) {
			return "crashed: " + firstLine(out[strings.Index(out, s):])
		}
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 160 {
		line = line[:160] + "..."
	}
	return line
}

// lastLines is the end of out, for a failure's outcome.
func lastLines(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 2 {
		lines = lines[len(lines)-2:]
	}
	s := strings.Join(lines, " | ")
	if len(s) > 240 {
		s = s[len(s)-240:]
	}
	return s
}

// freeAddr is a free loopback address for a child to listen on, outside
// the ephemeral ports, so that no other socket takes it before the child
// binds it (spawn.LoopbackAddrs).
func freeAddr() string {
	a, err := spawn.LoopbackAddrs(1)
	if err != nil {
		panic(err)
	}
	return a[0]
}

// rssMB is the resident memory of pid in MB, or -1.
func rssMB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb / 1024
		}
	}
	return -1
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 2 {
			if pp, _ := strconv.Atoi(f[1]); pp == pid {
				out = append(out, c)
			}
		}
	}
	return out
}

// dialMany opens n connections to addr and returns them; it stops early
// when the dialer runs out (the caller counts what it got).
func dialMany(addr string, n int, first []byte) []net.Conn {
	var conns []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		if first != nil {
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			c.Write(first)
		}
		conns = append(conns, c)
	}
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// waitListening waits until addr accepts connections.
func waitListening(addr string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		if ctx.Err() != nil {
			return errors.New("never listened on " + addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
