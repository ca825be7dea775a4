package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The cases of duplicate ranks and mismatched world sizes at a center
// (issue 11 item 3): workers started by hand, as on several hosts, two of
// them with the same --rank, one with another --world. The server
// refuses the second live rank and the other world size, naming both
// sides; a rank whose worker was killed is taken back by its restart,
// which continues its count, and every honest worker finishes.

// rankClaims runs a two-worker job of scheme at its center (smb when
// smb, else ps) and checks the refusals and the rejoin.
func rankClaims(scheme string, smb bool) func(*harness, string) string {
	return func(h *harness, dir string) string {
		// Only rank 0 prints progress; rank 1's last line says how far
		// it went (done: N iterations (from M) once restarted).
		env := []string{"DSGD_TOKEN=faults"}
		addr := freeAddr()
		center := addr
		var srv *proc
		if smb {
			center = "smb://" + addr
			srv = h.start(dir, env, "smb", "--listen", addr)
		} else {
			srv = h.start(dir, env, "ps", "--scheme", scheme, "--workers", "2", "--solver", "solver.prototxt", "--threads", "1", "--listen", addr)
		}
		defer srv.stop()
		if err := waitListening(addr, 20*time.Second); err != nil {
			return err.Error() + ": " + lastLines(srv.out.String())
		}
		// 600 iterations of at least 10 ms each: 6 s or more, time for the
		// intruders and the restart.
		worker := func(rank, world int, extra ...string) *proc {
			return h.start(dir, env, args([]string{"worker", "--scheme", scheme, "--rank", fmt.Sprint(rank), "--world", fmt.Sprint(world), "--center", center,
				"--solver", "solver.prototxt", "--threads", "1", "--iters", "600", "--display", "50", "--straggle", "p=1:10ms",
				"--snapshot-prefix", "none", "--test-interval", "0"}, extra...)...)
		}
		w0, w1 := worker(0, 2), worker(1, 2)
		defer w0.stop()
		defer w1.stop()
		if !w0.waitFor("  loss ", 40*time.Second) {
			return "rank 0 made no progress: " + lastLines(w0.out.String())
		}
		// A second rank 1, and a rank 1 of a three-worker job: refused.
		for _, tc := range []struct {
			world int
			want  []string
		}{
			{2, []string{"rank 1 is already held by a live worker connected from 127.0.0.1:", "refusing a second rank 1 from 127.0.0.1:"}},
			{3, []string{"job of 3 workers", "2"}},
		} {
			p := worker(1, tc.world)
			code := p.wait(30 * time.Second)
			out := p.out.String()
			if code == -1 {
				p.stop()
				return fmt.Sprintf("a rank 1 of world %d still runs beside the live one: %s", tc.world, lastLines(out))
			}
			if o := crashed(out); o != "" {
				return o
			}
			if code == 0 {
				return fmt.Sprintf("a rank 1 of world %d was accepted beside the live one", tc.world)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					return fmt.Sprintf("the refusal of a rank 1 of world %d lacks %q: %s", tc.world, w, lastLines(out))
				}
			}
			if !strings.Contains(srv.out.String(), tc.want[0]) {
				return fmt.Sprintf("the server's log lacks the refusal of a rank 1 of world %d: %s", tc.world, lastLines(srv.out.String()))
			}
		}
		if !w0.running() || !w1.running() {
			return "the job ended before the restart could be tried (too fast?): " + lastLines(w0.out.String())
		}
		// Rank 1 dies; its restart takes the rank back and continues.
		syscall.Kill(w1.cmd.Process.Pid, syscall.SIGKILL)
		w1.wait(10 * time.Second)
		again := worker(1, 2, "--metrics", "again.jsonl")
		defer again.stop()
		c0, c1 := w0.wait(60*time.Second), again.wait(60*time.Second)
		o0, o1 := w0.out.String(), again.out.String()
		switch {
		case c1 != 0:
			return fmt.Sprintf("restarted rank 1: exit %d: %s", c1, lastLines(o1))
		case c0 != 0:
			return fmt.Sprintf("rank 0: exit %d: %s", c0, lastLines(o0))
		case !strings.Contains(o0, "done: 600 iterations"):
			return "rank 0 did not finish: " + lastLines(o0)
		}
		its := metricIters(filepath.Join(dir, "again.jsonl.rank1"))
		if len(its) == 0 || its[0] == 0 || its[len(its)-1] != 599 {
			return fmt.Sprintf("restarted rank 1 ran %d iterations from %v: it did not continue its count to 599", len(its), its[:min(len(its), 1)])
		}
		if o := crashed(srv.out.String()); o != "" {
			return o
		}
		return crashed(o0 + o1)
	}
}

// metricIters is the iterations of a --metrics file's lines.
func metricIters(path string) []int {
	b, _ := os.ReadFile(path)
	var its []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m struct{ Iter int }
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			its = append(its, m.Iter)
		}
	}
	return its
}
