package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// The cases of a center's workers and store (issue 11 items 4 and 5) and
// of the metrics an operator scrapes.

// divergingWorker: under async over TCP, worker 2's solver has a learning
// rate of 1e30, so its first push is some 1e30 in norm. The parameter
// server, with --max-update-norm, refuses it naming worker 2 (in the
// worker's error and its own log); workers 0 and 1 train on to their
// last iteration. Without the bound the center took it and every worker
// died of NaN.
func divergingWorker(h *harness, dir string) string {
	os.WriteFile(filepath.Join(dir, "bad_solver.prototxt"), []byte(strings.Replace(tinySolver, "base_lr: 0.1 ", "base_lr: 1e30 ", 1)), 0o644)
	env := []string{"DSGD_TOKEN=faults"}
	addr := freeAddr()
	run := []string{"--scheme", "async", "--iters", "300", "--threads", "1", "--snapshot-prefix", "none", "--test-interval", "0", "--straggle", "p=1:5ms"}
	srv := h.start(dir, env, args([]string{"ps", "--workers", "3", "--listen", addr, "--solver", "solver.prototxt", "--max-update-norm", "1000"}, run...)...)
	defer srv.stop()
	if err := waitListening(addr, 20*time.Second); err != nil {
		return err.Error() + ": " + lastLines(srv.out.String())
	}
	worker := func(rank int, solver string) *proc {
		return h.start(dir, env, args([]string{"worker", "--rank", fmt.Sprint(rank), "--world", "3", "--center", addr, "--solver", solver}, run...)...)
	}
	w0, w1 := worker(0, "solver.prototxt"), worker(1, "solver.prototxt")
	defer w0.stop()
	defer w1.stop()
	bad := worker(2, "bad_solver.prototxt")
	defer bad.stop()
	cb, c0, c1 := bad.wait(60*time.Second), w0.wait(60*time.Second), w1.wait(60*time.Second)
	// Refused at join for its base_lr (issue 23 item 9), or, should it
	// get in, its update refused by --max-update-norm.
	const refusal, atJoin = "center refused worker 2's update", "worker 2 from"
	refused := func(out string) bool {
		return strings.Contains(out, refusal) || strings.Contains(out, atJoin) && strings.Contains(out, "base_lr")
	}
	switch out := bad.out.String(); {
	case cb == 0 || !refused(out):
		return fmt.Sprintf("the diverging worker: exit %d: %s", cb, lastLines(out))
	case c0 != 0 || !strings.Contains(w0.out.String(), "done: 300 iterations"):
		return fmt.Sprintf("worker 0: exit %d: %s", c0, lastLines(w0.out.String()))
	case c1 != 0:
		return fmt.Sprintf("worker 1: exit %d: %s", c1, lastLines(w1.out.String()))
	}
	srv.wait(20 * time.Second)
	if !refused(srv.out.String()) {
		return "the server's log does not name worker 2: " + lastLines(srv.out.String())
	}
	return crashed(srv.out.String() + w0.out.String() + w1.out.String() + bad.out.String())
}

// redisTwoJobs: two parameter servers of different jobs on one Redis.
// The second refuses the store, naming the first job; once the first has
// ended (its lease released), the second starts on the same Redis.
func redisTwoJobs(h *harness, dir string) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "redis-server is not installed (scripts/setup.sh installs it)"
	}
	raddr := freeAddr()
	_, port, _ := net.SplitHostPort(raddr)
	ctx, cancel := context.WithCancel(context.Background())
	redis := exec.CommandContext(ctx, bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := redis.Start(); err != nil {
		cancel()
		return err.Error()
	}
	defer func() { cancel(); redis.Wait() }()
	if err := waitListening(raddr, 20*time.Second); err != nil {
		return "redis-server: " + err.Error()
	}
	url := "redis://" + raddr
	ps := func(job string) (*proc, string) {
		addr := freeAddr()
		return h.start(dir, []string{"DSGD_TOKEN=faults", "DSGD_STORE=" + url}, "ps", "--scheme", "async", "--workers", "1", "--solver", "solver.prototxt",
			"--threads", "1", "--listen", addr, "--job", job), addr
	}
	first, addr := ps("alpha")
	defer first.stop()
	if err := waitListening(addr, 20*time.Second); err != nil {
		return "the first job's server: " + err.Error() + ": " + lastLines(first.out.String())
	}
	if !first.waitFor("serving", 20*time.Second) {
		return "the first job's server does not serve: " + lastLines(first.out.String())
	}
	second, _ := ps("beta")
	code := second.wait(30 * time.Second)
	out := second.out.String()
	switch {
	case code == -1:
		second.stop()
		return "the second job's server runs beside the first on one Redis"
	case code == 0 || !strings.Contains(out, `job "alpha"`):
		return fmt.Sprintf("the second job: exit %d, not naming job alpha: %s", code, lastLines(out))
	}
	// The first job ends (Ctrl-C): its lease goes, and the second may
	// use the store.
	syscall.Kill(-first.cmd.Process.Pid, syscall.SIGINT)
	first.wait(30 * time.Second)
	again, addr2 := ps("beta")
	defer again.stop()
	if err := waitListening(addr2, 20*time.Second); err != nil || !again.waitFor("serving", 20*time.Second) {
		return "the second job after the first ended: " + lastLines(again.out.String())
	}
	return crashed(out + first.out.String() + again.out.String())
}

// metricsScrape: a training run with --metrics-listen serves Prometheus
// metrics on loopback whose iteration count grows.
func metricsScrape(h *harness, dir string) string {
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--iters", "1000000", "--test-interval", "0", "--metrics-listen", "127.0.0.1:0")
	defer p.stop()
	if !p.waitFor("  loss ", 40*time.Second) {
		return "no progress: " + lastLines(p.out.String())
	}
	m := regexp.MustCompile(`metrics on http://(127\.0\.0\.1:[0-9]+)/metrics`).FindStringSubmatch(p.out.String())
	if m == nil {
		return "no loopback metrics address printed: " + lastLines(p.out.String())
	}
	iter := func() (float64, string) {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		v := regexp.MustCompile(`(?m)^dsgd_iteration (\S+)$`).FindStringSubmatch(string(b))
		if v == nil {
			return 0, "no dsgd_iteration in the scrape"
		}
		var f float64
		fmt.Sscan(v[1], &f)
		return f, ""
	}
	a, why := iter()
	if why != "" {
		return why
	}
	time.Sleep(300 * time.Millisecond)
	b, why := iter()
	if why != "" {
		return why
	}
	if !(b > a) {
		return fmt.Sprintf("dsgd_iteration went from %v to %v", a, b)
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	p.wait(30 * time.Second)
	return ""
}

// smbEMFILE: the shared buffer server with its descriptors lowered to 64
// and 200 idle strangers keeps serving (item 1, as ps-emfile for ps): a
// seasgd worker trains against it afterwards.
func smbEMFILE(h *harness, dir string) string {
	addr := freeAddr()
	cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, h.exe, "smb", "--listen", addr, "--shm", "off")
	smb := h.startCmd(dir, []string{"DSGD_TOKEN=faults"}, cmd)
	defer smb.stop()
	if err := waitListening(addr, 20*time.Second); err != nil {
		return err.Error() + ": " + lastLines(smb.out.String())
	}
	conns := dialMany(addr, 200, nil)
	defer closeAll(conns)
	time.Sleep(500 * time.Millisecond)
	if !smb.running() {
		return "smb exited under the flood: " + lastLines(smb.out.String())
	}
	closeAll(conns)
	w := h.start(dir, []string{"DSGD_TOKEN=faults"}, "worker", "--scheme", "seasgd", "--rank", "0", "--world", "1", "--center", "smb://"+addr, "--shm", "off",
		"--solver", "solver.prototxt", "--threads", "1", "--iters", "20", "--snapshot-prefix", "none", "--test-interval", "0")
	if code := w.wait(40 * time.Second); code != 0 {
		w.stop()
		return fmt.Sprintf("a worker after the flood: exit %d: %s", code, lastLines(w.out.String()))
	}
	return crashed(smb.out.String())
}
