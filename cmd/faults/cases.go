package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"dsgd/caffe/caffemodel"
	"dsgd/caffe/zoo"
	"dsgd/cmd/internal/tiny"
	"dsgd/comm/wire"
)

// The tiny net and solver (cmd/internal/tiny): every case trains in moments.
var tinyNet, tinySolver = tiny.Net, tiny.Solver

// train is the command line of a short run of the tiny net.
var train = []string{"train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1"}

func args(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

func cases() []faultCase {
	return []faultCase{
		// Servers and the wire.
		{"ps-emfile", "ps with 64 fds and 200 idle strangers keeps serving", 60 * time.Second, psEMFILE},
		{"smb-emfile", "smb with 64 fds and 200 idle strangers keeps serving", 60 * time.Second, smbEMFILE},
		{"smb-preauth-flood", "2000 pre-auth 200 KiB hellos: smb grows < 100 MB and serves", 60 * time.Second, smbFlood},
		{"ps-duplicate-rank", "ps: a second live rank 1 and a rank of another world size refused naming both; a killed rank rejoins", 90 * time.Second, rankClaims("async", false)},
		{"smb-duplicate-rank", "smb: a second live rank 1 and a rank of another world size refused naming both; a killed rank rejoins", 90 * time.Second, rankClaims("seasgd", true)},
		{"async-worker-diverges", "a worker with base_lr 1e30 refused at join (or its push by --max-update-norm), naming worker 2; the others finish", 90 * time.Second, divergingWorker},
		{"redis-two-jobs", "a second job's ps on one Redis refused naming the first; accepted once the first ended", 60 * time.Second, redisTwoJobs},
		{"rendezvous-strangers", "60 16 MiB hellos, 200 silent sockets: rank 0 grows < 30 MB, the group forms", 60 * time.Second, rendezvousStrangers},
		// Launcher and snapshots.
		{"ctrl-c-inproc", "SIGINT: snapshot, resume hint, exit 130", 60 * time.Second, ctrlC(syscall.SIGINT, 130)},
		{"sigterm-inproc", "SIGTERM: snapshot, exit 143", 60 * time.Second, ctrlC(syscall.SIGTERM, 143)},
		{"sighup-inproc", "SIGHUP: snapshot, exit 129 (ignored under nohup, and SIGINT stops it)", 60 * time.Second, ctrlC(syscall.SIGHUP, 129)},
		{"sigint-effect-snapshot", "--sigint-effect snapshot: SIGINT writes a snapshot and training goes on; SIGTERM then stops it, exit 143", 60 * time.Second, sigintSnapshot},
		{"ctrl-c-tcp", "SIGINT to a --transport tcp job: ranks stopped, not killed; snapshot; exit 130", 60 * time.Second, ctrlC(syscall.SIGINT, 130, "--transport", "tcp", "--workers", "2")},
		{"ctrl-c-tcp-async", "SIGINT to an async tcp job: snapshot of the center; exit 130", 60 * time.Second, ctrlC(syscall.SIGINT, 130, "--transport", "tcp", "--workers", "2", "--scheme", "async")},
		{"async-worker-dies", "an async tcp worker SIGKILLed: the others finish all their iterations", 60 * time.Second, asyncWorkerDies},
		{"sync-rank-dies", "a sync tcp rank SIGKILLed: rank 0 stops at once with a snapshot", 60 * time.Second, syncRankDies},
		{"ssp-worker-frozen", "an ssp tcp worker SIGSTOPped: dropped from the bound, the others train on; woken, it rejoins", 60 * time.Second, sspWorkerFrozen},
		{"sync-rank-frozen", "a sync tcp rank SIGSTOPped: rank 0's timeout names rank 1", 60 * time.Second, syncRankFrozen},
		{"sync-rank-frozen-3", "of 3 sync ranks over tcp (no shm), rank 1 SIGSTOPped: rank 0 names rank 1, not the healthy rank 2", 60 * time.Second, syncRankFrozen3},
		{"sync-rank-frozen-3-straggler", "of 3 sync ranks over tcp (no shm), rank 2 3 s slower every iteration, rank 1 SIGSTOPped: rank 0 names rank 1, not rank 2, which times out 3 s after it", 60 * time.Second, syncRankFrozen3Straggler},
		{"sync-rank-frozen-3-shm", "of 3 sync ranks on one host with shared memory, rank 1 SIGSTOPped: rank 0 names rank 1, not the healthy rank 2", 60 * time.Second, syncRankFrozen3Shm},
		{"sync-link-cut", "of 3 sync ranks over tcp (no shm), the link 1-2 cut silently (tc, own netns): exit non-zero within 1.5 × --comm-timeout, rank 0 naming rank 1 or 2", 60 * time.Second, syncLinkCut},
		{"elastic-rank-killed", "--elastic 2:4, 4 sync tcp workers, rank 2 SIGKILLed: the other 3 re-form at once and finish, exit 0", 60 * time.Second, elasticKilled},
		{"elastic-sync-ps-killed", "--elastic 2:4 under sync-ps, worker rank 2 SIGKILLed: the other 3 and the server re-form at once and finish, exit 0", 60 * time.Second, elasticKilledPS},
		{"elastic-rank-frozen", "--elastic 2:3, rank 1 SIGSTOPped: the other 2 re-form within 2 x --comm-timeout; woken, it rejoins and all finish", 90 * time.Second, elasticFrozen},
		{"elastic-join", "--elastic 2:3, a worker started with --elastic-coordinator joins a running group of 2; all finish", 90 * time.Second, elasticJoin},
		{"elastic-below-min", "--elastic 2:2, one of 2 killed: the survivor exits non-zero saying the group fell below 2, with a snapshot", 60 * time.Second, elasticBelowMin},
		{"second-signal", "a second SIGINT exits at once", 60 * time.Second, secondSignal},
		{"resume-restores-run", "--resume alone continues the snapshot's scheme, workers, iterations", 90 * time.Second, resumeRestores},
		{"exploding-weights", "exp lr_policy gamma 1.5: no snapshot of |w| > 1e8, non-zero exit", 60 * time.Second, exploding},
		{"test-nan-weights", "dsgd test on NaN weights fails", 60 * time.Second, testNaN},
		{"stale-tmp", "a .tmp of a killed snapshot write (every format) is removed at start", 60 * time.Second, staleTmp},
		{"exploding-weights-caffe", "exp lr_policy gamma 1.5, caffe format: no snapshot of |w| > 1e8, non-zero exit", 60 * time.Second, explodingIn("caffe")},
		{"exploding-weights-hdf5", "exp lr_policy gamma 1.5, hdf5 format: no snapshot of |w| > 1e8, non-zero exit", 60 * time.Second, explodingIn("hdf5")},
		{"two-runs-one-prefix", "a second run on a live run's snapshot prefix refused naming it; the live run's .tmp kept", 60 * time.Second, twoRunsOnePrefix},
		{"launcher-killed", "kill -9 of a --transport tcp launcher: rank 0 still snapshots", 60 * time.Second, launcherKilled},
		{"center-dies-at-start", "the launcher's ps dies at start: its error first, at once (not after --comm-timeout)", 60 * time.Second, centerDiesAtStart},
		{"center-killed", "the launcher's ps SIGKILLed mid-run: reported at once naming the center (not after --comm-timeout 30s); rank 0 snapshots", 90 * time.Second, centerKilled},
		// Bad models and flags.
		{"kernel-2^31-1", "kernel_size 2147483647: error naming the layer", 30 * time.Second, badModelLenet("kernel_size: 5", "kernel_size: 2147483647", `layer "conv1"`)},
		{"lenet-pool1-stride-7", "LeNet pool1 stride 7: error naming the layer", 30 * time.Second, badModelLenet("    kernel_size: 2\n    stride: 2", "    kernel_size: 2\n    stride: 7", `layer "pool1"`)},
		{"num_output-2e9", "num_output 2000000000: refused with the size", 30 * time.Second, badModel("num_output: 16 ", "num_output: 2000000000 ", "more than")},
		{"label>=num_output", "label beyond num_output: error naming layer and source", 30 * time.Second, badModel("num_output: 4 ", "num_output: 3 ", "source synthetic")},
		{"batch-1e9", "--batch 1000000000: refused before any work", 30 * time.Second, badFlag([]string{"--batch", "1000000000"}, "--batch")},
		{"prototxt-batch-1e9", "batch_size 1e9 in the net: refused with the size", 30 * time.Second, badModel("batch_size: 16 }", "batch_size: 1000000000 }", "more than")},
		{"no-loss", "a TRAIN net without a loss is refused", 30 * time.Second, badModel(`layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }`, "", "no loss")},
		{"iters-negative", "--iters -5 refused, exit 2", 30 * time.Second, badFlag([]string{"--iters", "-5"}, "--iters")},
		{"threads-negative", "--threads -1 refused, exit 2", 30 * time.Second, badFlag([]string{"--threads", "-1"}, "--threads")},
		{"time-budget-negative", "--time-budget -1s refused, exit 2", 30 * time.Second, badFlag([]string{"--time-budget", "-1s"}, "--time-budget")},
		{"scheme-unknown", "--scheme nosuch refused before the data loads", 30 * time.Second, badFlag([]string{"--scheme", "nosuch", "--data", "/nonexistent"}, "--scheme")},
		// Security.
		{"ps-no-token-off-loopback", "ps on 0.0.0.0 without a token refuses to start", 30 * time.Second, noToken("ps", "--scheme", "async", "--workers", "2", "--solver", "solver.prototxt", "--listen", "0.0.0.0:0")},
		{"smb-no-token-off-loopback", "smb on 0.0.0.0 without a token refuses to start", 30 * time.Second, noToken("smb", "--listen", "0.0.0.0:0")},
		{"rendezvous-no-token-off-loopback", "a rank 0 whose rendezvous is on 0.0.0.0 without a token refuses to start", 30 * time.Second, noToken("worker", "--rank", "0", "--world", "2", "--rendezvous", "0.0.0.0:0", "--solver", "solver.prototxt", "--threads", "1", "--iters", "5")},
		{"secrets-off-argv", "the launcher's children carry no token in argv (nor --store URL)", 60 * time.Second, secretsOffArgv},
		// The operator's view.
		{"help-stdout", "-h prints to stdout, exit 0", 30 * time.Second, helpStdout},
		{"unknown-flag", "an unknown flag: one line saying how to get help, exit 2", 30 * time.Second, unknownFlag},
		{"metrics-scrape", "--metrics-listen serves Prometheus metrics on loopback; dsgd_iteration grows", 60 * time.Second, metricsScrape},
		{"log-plain", "progress to a file has no terminal escapes", 60 * time.Second, logPlain},
	}
}

func psEMFILE(h *harness, dir string) string {
	addr := freeAddr()
	// The shell lowers the descriptor limit for the server alone.
	cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, h.exe, "ps", "--scheme", "async", "--workers", "1", "--solver", "solver.prototxt", "--threads", "1", "--listen", addr)
	ps := h.startCmd(dir, []string{"DSGD_TOKEN=faults"}, cmd)
	defer ps.stop()
	if err := waitListening(addr, 20*time.Second); err != nil {
		return err.Error() + ": " + lastLines(ps.out.String())
	}
	conns := dialMany(addr, 200, nil)
	defer closeAll(conns)
	time.Sleep(500 * time.Millisecond)
	if !ps.running() {
		return "ps exited under the flood: " + lastLines(ps.out.String())
	}
	closeAll(conns)
	worker := h.start(dir, []string{"DSGD_TOKEN=faults"}, "worker", "--scheme", "async", "--rank", "0", "--world", "1", "--center", addr, "--solver", "solver.prototxt", "--threads", "1", "--iters", "20", "--snapshot-prefix", "none", "--test-interval", "0")
	if code := worker.wait(40 * time.Second); code != 0 {
		worker.stop()
		return fmt.Sprintf("a worker after the flood: exit %d: %s", code, lastLines(worker.out.String()))
	}
	if o := crashed(ps.out.String()); o != "" {
		return o
	}
	return ""
}

func smbFlood(h *harness, dir string) string {
	addr := freeAddr()
	smb := h.start(dir, []string{"DSGD_TOKEN=faults"}, "smb", "--listen", addr)
	defer smb.stop()
	if err := waitListening(addr, 20*time.Second); err != nil {
		return err.Error()
	}
	before := rssMB(smb.cmd.Process.Pid)
	// Each announces a 200 KiB hello and sends 64 KiB of it.
	hello := append(wire.AppendHeader(nil, wire.Header{Kind: wire.KindControl, Len: 200 << 10}), make([]byte, 64<<10)...)
	conns := dialMany(addr, 2000, hello)
	defer closeAll(conns)
	time.Sleep(time.Second)
	rss := rssMB(smb.cmd.Process.Pid)
	if !smb.running() {
		return "smb exited: " + lastLines(smb.out.String())
	}
	if rss-before > 100 {
		return fmt.Sprintf("smb grew from %d MB to %d MB under %d pre-auth connections", before, rss, len(conns))
	}
	closeAll(conns)
	w := h.start(dir, []string{"DSGD_TOKEN=faults"}, "worker", "--scheme", "seasgd", "--rank", "0", "--world", "1", "--center", "smb://"+addr, "--solver", "solver.prototxt", "--threads", "1", "--iters", "20", "--snapshot-prefix", "none", "--test-interval", "0")
	if code := w.wait(40 * time.Second); code != 0 {
		w.stop()
		return fmt.Sprintf("a worker after the flood: exit %d: %s", code, lastLines(w.out.String()))
	}
	return ""
}

func rendezvousStrangers(h *harness, dir string) string {
	rdv := freeAddr()
	common := []string{"--world", "2", "--rendezvous", rdv, "--solver", "solver.prototxt", "--threads", "1", "--iters", "20", "--test-interval", "0", "--snapshot-prefix", "none"}
	env := []string{"DSGD_TOKEN=faults"}
	r0 := h.start(dir, env, args([]string{"worker", "--rank", "0"}, common...)...)
	defer r0.stop()
	if err := waitListening(rdv, 20*time.Second); err != nil {
		return err.Error() + ": " + lastLines(r0.out.String())
	}
	before := rssMB(r0.cmd.Process.Pid)
	// 60 strangers announce 16 MiB control frames and send 1 MiB of
	// them; 200 say nothing.
	hello := append(wire.AppendHeader(nil, wire.Header{Kind: wire.KindControl, Len: 16 << 20}), make([]byte, 1<<20)...)
	big := dialMany(rdv, 60, hello)
	defer closeAll(big)
	silent := dialMany(rdv, 200, nil)
	defer closeAll(silent)
	time.Sleep(500 * time.Millisecond)
	rss := rssMB(r0.cmd.Process.Pid)
	r1 := h.start(dir, env, args([]string{"worker", "--rank", "1"}, common...)...)
	defer r1.stop()
	c0, c1 := r0.wait(60*time.Second), r1.wait(60*time.Second)
	switch {
	case c0 != 0 || c1 != 0:
		return fmt.Sprintf("exit %d and %d: %s | %s", c0, c1, lastLines(r0.out.String()), lastLines(r1.out.String()))
	case rss-before > 30:
		return fmt.Sprintf("rank 0 grew from %d MB to %d MB", before, rss)
	}
	return ""
}

// ctrlC starts a long run, signals its process group once progress shows
// (as a terminal's Ctrl-C does), and wants the exit status, a snapshot and
// the resume hint.
func ctrlC(sig syscall.Signal, want int, extra ...string) func(*harness, string) string {
	return func(h *harness, dir string) string {
		p := h.start(dir, nil, args([]string{"train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--test-interval", "0"}, extra...)...)
		defer p.stop()
		if !p.waitFor("  loss ", 40*time.Second) {
			return "no progress: " + lastLines(p.out.String())
		}
		if sig == syscall.SIGHUP && signal.Ignored(syscall.SIGHUP) {
			// This harness runs with SIGHUP ignored (under nohup), and so
			// does dsgd, which inherits it: a hang-up must then leave the
			// run alone (interrupt's rule), and SIGINT still stops it.
			syscall.Kill(-p.cmd.Process.Pid, sig)
			if code := p.wait(3 * time.Second); code != -1 {
				return fmt.Sprintf("SIGHUP is ignored here (nohup), yet dsgd exited %d on one: %s", code, lastLines(p.out.String()))
			}
			sig, want = syscall.SIGINT, 130
		}
		syscall.Kill(-p.cmd.Process.Pid, sig)
		code := p.wait(30 * time.Second)
		out := p.out.String()
		snaps, _ := filepath.Glob(filepath.Join(dir, "out", "tiny_iter_*.dsgdsnap"))
		switch {
		case code != want:
			return fmt.Sprintf("exit %d: %s", code, lastLines(out))
		case len(snaps) == 0:
			return "no snapshot"
		case !strings.Contains(out, "--resume"):
			return "no resume hint"
		case strings.Contains(out, "signal: killed"):
			return "a rank was SIGKILLed"
		case strings.Contains(out, "replica"):
			return "the snapshot holds rank 0's replica, not the center's weights: " + lastLines(out)
		}
		return crashed(out)
	}
}

// sigintSnapshot: Caffe's -sigint_effect snapshot. A SIGINT asks for a
// snapshot at the end of the iteration, the run goes on past it, and
// SIGTERM (still "stop") ends it with another.
func sigintSnapshot(h *harness, dir string) string {
	// No periodic snapshots: the ones counted are the signals'.
	os.WriteFile(filepath.Join(dir, "solver.prototxt"), []byte(strings.Replace(tinySolver, "snapshot: 20 ", "", 1)), 0o644)
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--test-interval", "0", "--sigint-effect", "snapshot")
	defer p.stop()
	if !p.waitFor("  loss ", 40*time.Second) {
		return "no progress: " + lastLines(p.out.String())
	}
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGINT)
	if !p.waitFor("snapshot out/tiny_iter_", 20*time.Second) {
		return "SIGINT with --sigint-effect snapshot wrote no snapshot: " + lastLines(p.out.String())
	}
	if code := p.wait(2 * time.Second); code != -1 {
		return fmt.Sprintf("the run stopped (exit %d) after a requested snapshot: %s", code, lastLines(p.out.String()))
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "out", "tiny_iter_*.dsgdsnap"))
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	code := p.wait(30 * time.Second)
	out := p.out.String()
	after, _ := filepath.Glob(filepath.Join(dir, "out", "tiny_iter_*.dsgdsnap"))
	switch {
	case code != 143:
		return fmt.Sprintf("SIGTERM: exit %d, want 143: %s", code, lastLines(out))
	case len(snaps) != 1 || len(after) != 2:
		return fmt.Sprintf("%d snapshots after SIGINT and %d after SIGTERM, want 1 and 2", len(snaps), len(after))
	case !strings.Contains(out, "training goes on (--sigint-effect snapshot)"):
		return "SIGINT's effect not said: " + lastLines(out)
	}
	return crashed(out)
}

func secondSignal(h *harness, dir string) string {
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--workers", "2", "--test-interval", "0")
	defer p.stop()
	if !p.waitFor("  loss ", 40*time.Second) {
		return "no progress"
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	t0 := time.Now()
	code := p.wait(10 * time.Second)
	if code != 130 {
		return fmt.Sprintf("exit %d: %s", code, lastLines(p.out.String()))
	}
	if d := time.Since(t0); d > 5*time.Second {
		return fmt.Sprintf("took %v", d)
	}
	return ""
}

func resumeRestores(h *harness, dir string) string {
	code, out := h.dsgd(dir, 60*time.Second, "train", "--solver", "solver.prototxt", "--threads", "1", "--scheme", "easgd", "--workers", "3", "--iters", "40", "--test-interval", "0")
	if code != 0 {
		return "first run: " + lastLines(out)
	}
	code, out = h.dsgd(dir, 60*time.Second, "train", "--solver", "solver.prototxt", "--threads", "1", "--resume", "out/tiny_iter_20.dsgdsnap")
	if code != 0 {
		return "resume: " + lastLines(out)
	}
	for _, w := range []string{"scheme easgd, 3 worker(s)", "done: 20 iterations (from 20)", "restoring the snapshot's run"} {
		if !strings.Contains(out, w) {
			return "resume output lacks " + w
		}
	}
	return ""
}

func exploding(h *harness, dir string) string {
	os.WriteFile(filepath.Join(dir, "solver.prototxt"), []byte(strings.Replace(tinySolver, `lr_policy: "fixed"`, `lr_policy: "exp" gamma: 1.5`, 1)), 0o644)
	code, out := h.dsgd(dir, 60*time.Second, args(train, "--test-interval", "0")...)
	if code == 0 {
		return "the run succeeded"
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "out", "*.dsgdsnap"))
	for _, s := range snaps {
		if w := maxWeight(s); w > 1e8 || math.IsNaN(w) {
			return fmt.Sprintf("%s holds a weight of %g", filepath.Base(s), w)
		}
	}
	return crashed(out)
}

// maxWeight reads the largest |weight| of a snapshot (format versions 1
// and 2 share the header and the parameters' place).
func maxWeight(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 40 {
		return math.NaN()
	}
	n := binary.LittleEndian.Uint64(b[32:])
	m := 0.0
	for i := uint64(0); i < n && 40+4*i+4 <= uint64(len(b)); i++ {
		v := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[40+4*i:])))
		if math.IsNaN(v) {
			return v
		}
		m = math.Max(m, math.Abs(v))
	}
	return m
}

func testNaN(h *harness, dir string) string {
	code, out := h.dsgd(dir, 60*time.Second, args(train, "--iters", "20")...)
	if code != 0 {
		return "train: " + lastLines(out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "tiny_iter_20.dsgdsnap"))
	if err != nil {
		return err.Error()
	}
	// NaN weights, and the checksum recomputed over them, so the file
	// is a well-formed snapshot of a diverged model.
	n := binary.LittleEndian.Uint64(b[32:])
	for i := uint64(0); i < n; i++ {
		binary.LittleEndian.PutUint32(b[40+4*i:], math.Float32bits(float32(math.NaN())))
	}
	body := b[:len(b)-4]
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32c(body))
	os.WriteFile(filepath.Join(dir, "nan.dsgdsnap"), b, 0o644)
	code, out = h.dsgd(dir, 60*time.Second, "test", "--solver", "solver.prototxt", "--threads", "1", "--weights", "nan.dsgdsnap")
	if code == 0 {
		return "exit 0: " + lastLines(out)
	}
	return crashed(out)
}

func staleTmp(h *harness, dir string) string {
	os.MkdirAll(filepath.Join(dir, "out"), 0o755)
	var stale []string
	for _, ext := range []string{".dsgdsnap", ".caffemodel", ".solverstate", ".caffemodel.h5", ".solverstate.h5"} {
		p := filepath.Join(dir, "out", ".tiny_iter_100"+ext+".tmp123")
		os.WriteFile(p, []byte("half a snapshot"), 0o644)
		stale = append(stale, p)
	}
	code, out := h.dsgd(dir, 60*time.Second, args(train, "--iters", "5")...)
	if code != 0 {
		return lastLines(out)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); err == nil {
			return filepath.Base(p) + " still there"
		}
	}
	return ""
}

// explodingIn is exploding with the snapshots in a Caffe format.
func explodingIn(format string) func(*harness, string) string {
	return func(h *harness, dir string) string {
		os.WriteFile(filepath.Join(dir, "solver.prototxt"), []byte(strings.Replace(tinySolver, `lr_policy: "fixed"`, `lr_policy: "exp" gamma: 1.5`, 1)), 0o644)
		code, out := h.dsgd(dir, 60*time.Second, args(train, "--test-interval", "0", "--snapshot-format", format)...)
		if code == 0 {
			return "the run succeeded"
		}
		models, _ := filepath.Glob(filepath.Join(dir, "out", "*.caffemodel*"))
		for _, m := range models {
			n, err := caffemodel.ReadModel(m)
			if err != nil {
				return fmt.Sprintf("%s: %v", filepath.Base(m), err)
			}
			for _, l := range n.Layers {
				for _, b := range l.Blobs {
					for _, v := range b.Data {
						if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e8 {
							return fmt.Sprintf("%s holds a weight of %g", filepath.Base(m), v)
						}
					}
				}
			}
		}
		return crashed(out)
	}
}

// twoRunsOnePrefix starts a second run on the snapshot prefix of a live
// one: it must be refused naming the holder, and leave the live run's
// in-flight temporary file alone.
func twoRunsOnePrefix(h *harness, dir string) string {
	first := h.start(dir, nil, args(train, "--iters", "1000000", "--test-interval", "0", "--straggle", "0:5ms")...)
	defer first.stop()
	lock := filepath.Join(dir, "out", "tiny.lock")
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(lock); err == nil && len(b) > 0 {
			break
		}
		if time.Now().After(end) || !first.running() {
			return "the first run took no lock: " + lastLines(first.out.String())
		}
	}
	inflight := filepath.Join(dir, "out", ".tiny_iter_7.dsgdsnap.tmp99")
	os.WriteFile(inflight, []byte("the live run's write"), 0o644)
	code, out := h.dsgd(dir, 30*time.Second, args(train, "--iters", "5")...)
	if code == 0 || !strings.Contains(out, "in use by a live run") || !strings.Contains(out, fmt.Sprintf("pid %d", first.cmd.Process.Pid)) {
		return fmt.Sprintf("the second run: exit %d: %s", code, lastLines(out))
	}
	if _, err := os.Stat(inflight); err != nil {
		return "the live run's temporary file was removed"
	}
	return crashed(out)
}

// launcherKilled kills a --transport tcp launcher with -9 while its ranks
// train: rank 0 must still write its snapshot (it died of a second
// SIGTERM or of SIGPIPE on the dead launcher's pipe).
func launcherKilled(h *harness, dir string) string {
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--test-interval", "0",
		"--transport", "tcp", "--workers", "2", "--scheme", "sync-tree")
	defer p.stop()
	r0, why := p.rankOnceTraining(0)
	if why != "" {
		return why
	}
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	p.wait(10 * time.Second)
	for end := time.Now().Add(30 * time.Second); syscall.Kill(r0, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			syscall.Kill(r0, syscall.SIGKILL)
			return "rank 0 still runs 30 s after its launcher died"
		}
	}
	if snaps, _ := filepath.Glob(filepath.Join(dir, "out", "tiny_iter_*.dsgdsnap")); len(snaps) == 0 {
		return "rank 0 wrote no snapshot"
	}
	return ""
}

// centerDiesAtStart gives the launcher's parameter server a bad --shard
// (the server's alone): its death must be reported first, at once.
// centerKilled: the launcher's parameter server SIGKILLed while an async
// job trains: the launcher says so at once, naming the center, and the
// workers stop with a snapshot of rank 0's replica (--comm-timeout 30s:
// the report must not wait for it).
func centerKilled(h *harness, dir string) string {
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--test-interval", "0",
		"--transport", "tcp", "--workers", "2", "--scheme", "async", "--comm-timeout", "30s")
	defer p.stop()
	if !p.waitFor("  loss ", 40*time.Second) {
		return "no progress: " + lastLines(p.out.String())
	}
	var pid int
	for _, k := range children(p.cmd.Process.Pid) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k)); strings.HasPrefix(strings.ReplaceAll(string(b), "\x00", " "), h.exe+" ps ") {
			pid = k
		}
	}
	if pid == 0 {
		return "the center's process not found"
	}
	t0 := time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	code := p.wait(45 * time.Second)
	out := p.out.String()
	switch {
	case code == -1 || code == 0:
		return fmt.Sprintf("exit %d", code)
	case time.Since(t0) > 20*time.Second:
		return fmt.Sprintf("took %v to stop (--comm-timeout 30s)", time.Since(t0).Round(time.Second))
	case !strings.Contains(out, "--resume"):
		return "no snapshot of rank 0's replica: " + lastLines(out)
	}
	if why := h.detect(p, t0, "the center (dsgd ps"); why != "" {
		return why + ": " + lastLines(out)
	}
	return crashed(out)
}

func centerDiesAtStart(h *harness, dir string) string {
	t0 := time.Now()
	code, out := h.dsgd(dir, 45*time.Second, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "20", "--test-interval", "0",
		"--transport", "tcp", "--workers", "2", "--scheme", "async", "--shard", "3/2", "--comm-timeout", "30s")
	switch {
	case code == 0:
		return "the run succeeded"
	case time.Since(t0) > 15*time.Second:
		return fmt.Sprintf("took %v (--comm-timeout 30s)", time.Since(t0).Round(time.Second))
	case !strings.Contains(out, "the center (dsgd ps") || !strings.Contains(out, "--shard"):
		return "the server's death is not reported: " + lastLines(out)
	}
	// The whole run is the fault here: its latency bounds the report's.
	h.detected = time.Since(t0)
	return crashed(out)
}

// badModel replaces from with to in the tiny net and wants exit 1 with
// want in the output, and no crash.
func badModel(from, to, want string) func(*harness, string) string {
	return func(h *harness, dir string) string {
		net := strings.Replace(tinyNet, from, to, 1)
		if net == tinyNet {
			return "the case's edit did not apply"
		}
		os.WriteFile(filepath.Join(dir, "net.prototxt"), []byte(net), 0o644)
		return wantError(h.dsgd(dir, 30*time.Second, args(train, "--iters", "3")...))(1, want)
	}
}

// badModelLenet edits the built-in LeNet the same way.
func badModelLenet(from, to, want string) func(*harness, string) string {
	return func(h *harness, dir string) string {
		lenet, _, err := zoo.Get("lenet")
		if err != nil {
			return err.Error()
		}
		net := strings.Replace(string(lenet), from, to, 1)
		if net == string(lenet) {
			return "the case's edit did not apply"
		}
		os.WriteFile(filepath.Join(dir, "lenet.prototxt"), []byte(net), 0o644)
		os.WriteFile(filepath.Join(dir, "lenet_solver.prototxt"), []byte("net: \"lenet.prototxt\"\nbase_lr: 0.01\nlr_policy: \"fixed\"\nmax_iter: 3\n"), 0o644)
		return wantError(h.dsgd(dir, 30*time.Second, "train", "--solver", "lenet_solver.prototxt", "--data", "synthetic:N=64,C=1,H=28,W=28,classes=10", "--threads", "1", "--workers", "1", "--iters", "2"))(1, want)
	}
}

func badFlag(flags []string, want string) func(*harness, string) string {
	return func(h *harness, dir string) string {
		return wantError(h.dsgd(dir, 30*time.Second, args(train, flags...)...))(2, want)
	}
}

// wantError checks a finished run: exit status code, want in its output,
// no crash.
func wantError(code int, out string) func(int, string) string {
	return func(wantCode int, want string) string {
		if o := crashed(out); o != "" {
			return o
		}
		if code != wantCode {
			return fmt.Sprintf("exit %d, want %d: %s", code, wantCode, lastLines(out))
		}
		if !strings.Contains(out, want) {
			return fmt.Sprintf("output lacks %q: %s", want, lastLines(out))
		}
		return ""
	}
}

func noToken(a ...string) func(*harness, string) string {
	return func(h *harness, dir string) string {
		p := h.startCmd(dir, []string{"DSGD_TOKEN=", "DSGD_TOKEN_FILE="}, exec.Command(h.exe, a...))
		code := p.wait(20 * time.Second)
		if code == -1 {
			p.stop()
			return "it started and served"
		}
		if code == 0 || !strings.Contains(p.out.String(), "token") {
			return fmt.Sprintf("exit %d: %s", code, lastLines(p.out.String()))
		}
		return ""
	}
}

func secretsOffArgv(h *harness, dir string) string {
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--test-interval", "0", "--transport", "tcp", "--workers", "2", "--scheme", "async")
	defer p.stop()
	if !p.waitFor("  loss ", 40*time.Second) {
		return "no progress: " + lastLines(p.out.String())
	}
	kids := children(p.cmd.Process.Pid)
	if len(kids) < 3 {
		return fmt.Sprintf("%d children, want a server and 2 workers", len(kids))
	}
	for _, k := range kids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k))
		argv := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(argv, "--token") || strings.Contains(argv, "redis://") {
			return "child argv: " + argv
		}
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	p.wait(30 * time.Second)
	return ""
}

func helpStdout(h *harness, dir string) string {
	cmd := exec.Command(h.exe, "train", "-h")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil || !strings.Contains(out.String(), "-iters") || errb.Len() > 0 {
		return fmt.Sprintf("err %v, stdout %d bytes, stderr %q", err, out.Len(), errb.String())
	}
	return ""
}

func unknownFlag(h *harness, dir string) string {
	code, out := h.dsgd(dir, 10*time.Second, "train", "--nope")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 2 || len(lines) != 1 || !strings.Contains(out, "-h") {
		return fmt.Sprintf("exit %d, %d lines: %s", code, len(lines), lastLines(out))
	}
	return ""
}

func logPlain(h *harness, dir string) string {
	code, out := h.dsgd(dir, 60*time.Second, args(train, "--iters", "30")...)
	if code != 0 {
		return lastLines(out)
	}
	if strings.ContainsAny(out, "\r\x1b") {
		return "terminal escapes in the log"
	}
	return ""
}

// rankPid finds the launcher's child running rank r ("worker --rank r").
func rankPid(launcher, r int) int {
	for _, k := range children(launcher) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k))
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), fmt.Sprintf("worker --rank %d ", r)) {
			return k
		}
	}
	return 0
}

func asyncWorkerDies(h *harness, dir string) string {
	// Every worker takes 10 ms more an iteration: some 12 s for 1200,
	// past the 10 s after which the launcher used to stop the others.
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1200", "--test-interval", "0", "--display", "100",
		"--transport", "tcp", "--workers", "3", "--scheme", "async", "--straggle", "p=1:10ms")
	defer p.stop()
	_, code, out, why := p.killRank(2, 50*time.Second)
	switch {
	case why != "":
		return why
	case code == -1:
		return "still running"
	case !strings.Contains(out, "done: 1200 iterations"):
		return fmt.Sprintf("rank 0 did not finish (exit %d): %s", code, lastLines(out))
	case !strings.Contains(out, "rank 2:"):
		return "the dead rank is not reported"
	}
	return crashed(out)
}

func syncRankDies(h *harness, dir string) string {
	p := h.start(dir, nil, "train", "--solver", "solver.prototxt", "--threads", "1", "--iters", "1000000", "--test-interval", "0",
		"--transport", "tcp", "--workers", "2", "--scheme", "sync-ring")
	defer p.stop()
	t0, code, out, why := p.killRank(1, 30*time.Second)
	if why != "" {
		return why
	}
	if why := h.detect(p, t0, "rank 1"); why != "" {
		return why + ": " + lastLines(out)
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "out", "tiny_iter_*.dsgdsnap"))
	switch {
	case code == -1 || code == 0:
		return fmt.Sprintf("exit %d", code)
	case time.Since(t0) > 15*time.Second:
		return fmt.Sprintf("took %v to stop", time.Since(t0).Round(time.Second))
	case len(snaps) == 0 || !strings.Contains(out, "--resume"):
		return "no snapshot of the last iteration: " + lastLines(out)
	}
	return crashed(out)
}
