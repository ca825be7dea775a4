package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// The cases of an elastic synchronous group (--elastic MIN:MAX, issue
// 26): a member killed, frozen, one joining, and too few left. The
// detection column is the time from the fault to the coordinator's new
// generation: the survivors going on.

// elasticRun is the launcher's command line for an elastic sync-ring
// group of the tiny net; every iteration takes 5 ms more, so that the
// run lasts past the faults.
func elasticRun(workers, bounds string, iters int, more ...string) []string {
	return append([]string{"train", "--solver", "solver.prototxt", "--threads", "1", "--iters", fmt.Sprint(iters), "--test-interval", "0", "--display", "10",
		"--transport", "tcp", "--workers", workers, "--scheme", "sync-ring", "--elastic", bounds, "--straggle", "p=1:5ms"}, more...)
}

// elasticKilled: of 4 workers, rank 2 is SIGKILLed mid-run; the other 3
// form the next generation at once and finish every iteration, and the
// launcher exits 0 saying rank 2 left.
func elasticKilled(h *harness, dir string) string { return elasticKilledIn(h, dir, "sync-ring", "") }

// elasticKilledPS is elasticKilled under sync-ps: the server (rank 4)
// stays, the last rank of the next generation too.
func elasticKilledPS(h *harness, dir string) string {
	return elasticKilledIn(h, dir, "sync-ps", " and the server")
}

func elasticKilledIn(h *harness, dir, scheme, server string) string {
	const iters = 600
	p := h.start(dir, nil, elasticRun("4", "2:4", iters, "--comm-timeout", "10s", "--scheme", scheme)...)
	defer p.stop()
	t0, code, out, why := p.killRank(2, 50*time.Second)
	switch {
	case why != "":
		return why
	case code != 0:
		return fmt.Sprintf("exit %d: %s", code, lastLines(out))
	case !strings.Contains(out, fmt.Sprintf("done: %d iterations", iters)):
		return "the survivors did not finish: " + lastLines(out)
	case !strings.Contains(out, "rank 2 left the elastic group"):
		return "the launcher does not say that rank 2 left: " + lastLines(out)
	}
	if why := h.detect(p, t0, "generation 2: 3 workers"+server+" (3 kept, 0 joined)"); why != "" {
		return why
	}
	return crashed(out)
}

// elasticFrozen: of 3 workers, rank 1 is SIGSTOPped; the others notice
// within --comm-timeout (2 s), the coordinator leaves it out after as
// long again, and the two go on. Woken, rank 1 finds its generation gone
// and joins the next one as a newcomer; all three finish.
func elasticFrozen(h *harness, dir string) string {
	const iters = 500
	p := h.start(dir, nil, elasticRun("3", "2:3", iters, "--comm-timeout", "2s")...)
	defer p.stop()
	pid, why := p.rankOnceTraining(1)
	if why != "" {
		return why
	}
	t0 := time.Now()
	syscall.Kill(pid, syscall.SIGSTOP)
	if !p.waitFor("generation 2: 2 workers", 15*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		return "no new generation 15 s after rank 1 froze: " + lastLines(p.out.String())
	}
	if why := h.detect(p, t0, "generation 2: 2 workers"); why != "" {
		syscall.Kill(pid, syscall.SIGKILL)
		return why
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if !p.waitFor("generation 3: 3 workers (2 kept, 1 joined)", 20*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		return "rank 1, woken, did not rejoin within 20 s: " + lastLines(p.out.String())
	}
	code := p.wait(50 * time.Second)
	out := p.out.String()
	switch {
	case code != 0:
		return fmt.Sprintf("exit %d: %s", code, lastLines(out))
	case !strings.Contains(out, fmt.Sprintf("done: %d iterations", iters)):
		return "the group did not finish: " + lastLines(out)
	case strings.Contains(out, "left the elastic group"):
		return "a rank is reported lost though it rejoined: " + lastLines(out)
	}
	return crashed(out)
}

var coordinatorLine = regexp.MustCompile(`elastic coordinator on (\S+):`)

// elasticJoin: a group of 2 (bounds 2:3) is joined by a worker started
// by hand with --elastic-coordinator; the group re-forms with 3 at an
// iteration boundary and every worker finishes, the joiner too.
func elasticJoin(h *harness, dir string) string {
	const iters = 600
	env := []string{"DSGD_TOKEN=elastic-join-test"}
	p := h.start(dir, env, elasticRun("2", "2:3", iters)...)
	defer p.stop()
	if !p.waitFor("  loss ", 40*time.Second) {
		return "no progress: " + lastLines(p.out.String())
	}
	m := coordinatorLine.FindStringSubmatch(p.out.String())
	if m == nil {
		return "the launcher does not print its coordinator's address: " + lastLines(p.out.String())
	}
	cmd := exec.Command(h.exe, "worker", "--solver", "solver.prototxt", "--threads", "1", "--iters", fmt.Sprint(iters), "--test-interval", "0",
		"--scheme", "sync-ring", "--elastic", "2:3", "--elastic-coordinator", m[1], "--straggle", "p=1:5ms")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	t0 := time.Now()
	j := h.startCmd(dir, env, cmd)
	defer j.stop()
	if !p.waitFor("generation 2: 3 workers (2 kept, 1 joined)", 20*time.Second) {
		return "the joiner was not let in within 20 s: " + lastLines(p.out.String()) + " / joiner: " + lastLines(j.out.String())
	}
	if why := h.detect(p, t0, "generation 2: 3 workers"); why != "" {
		return why
	}
	code, jcode := p.wait(50*time.Second), j.wait(20*time.Second)
	out := p.out.String()
	switch {
	case code != 0:
		return fmt.Sprintf("the launcher: exit %d: %s", code, lastLines(out))
	case jcode != 0:
		return fmt.Sprintf("the joiner: exit %d: %s", jcode, lastLines(j.out.String()))
	case !strings.Contains(out, fmt.Sprintf("done: %d iterations", iters)):
		return "rank 0 did not finish: " + lastLines(out)
	}
	return crashed(out + j.out.String())
}

// elasticBelowMin: of 2 workers (bounds 2:2), one is killed: the other
// cannot go on alone and exits non-zero, saying why, with a snapshot.
func elasticBelowMin(h *harness, dir string) string {
	p := h.start(dir, nil, elasticRun("2", "2:2", 100000, "--snapshot-prefix", filepath.Join(dir, "snap", "s"))...)
	defer p.stop()
	t0, code, out, why := p.killRank(1, 30*time.Second)
	switch {
	case why != "":
		return why
	case code <= 0:
		return fmt.Sprintf("exit %d: %s", code, lastLines(out))
	case !strings.Contains(out, "fewer than the minimum 2"):
		return "the error does not say the group fell below its minimum: " + lastLines(out)
	case !strings.Contains(out, "snapshot of iteration"):
		return "no snapshot of the last iteration: " + lastLines(out)
	}
	if why := h.detect(p, t0, "fewer than the minimum 2"); why != "" {
		return why
	}
	return crashed(out)
}
