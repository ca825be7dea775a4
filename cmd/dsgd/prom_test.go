package main

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMetricsListen: a training run and a parameter server serve
// Prometheus metrics that move with the run.
func TestMetricsListen(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	addrRE := regexp.MustCompile(`metrics on http://([0-9.:]+)/metrics`)
	scrape := func(c *child) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !addrRE.MatchString(c.out.String()) {
			if time.Now().After(deadline) || !c.running() {
				t.Fatalf("%s printed no metrics address:\n%s", c.name, c.out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		addr := addrRE.FindStringSubmatch(c.out.String())[1]
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	value := func(text, name string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s in:\n%s", name, text)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}

	tr := startChild(t, dir, "train", "train", "--solver", "solver.prototxt", "--threads", "1", "--workers", "1", "--iters", "1000000", "--test-interval", "0", "--metrics-listen", "127.0.0.1:0")
	for !strings.Contains(tr.out.String(), "  loss ") {
		if !tr.running() {
			t.Fatalf("train exited:\n%s", tr.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	first := scrape(tr)
	time.Sleep(200 * time.Millisecond)
	second := scrape(tr)
	if a, b := value(first, "dsgd_iteration"), value(second, "dsgd_iteration"); !(a > 0 && b > a) {
		t.Errorf("dsgd_iteration %v then %v: want it to grow", a, b)
	}
	if l := value(second, "dsgd_loss"); !(l > 0) {
		t.Errorf("dsgd_loss %v", l)
	}
	for _, name := range []string{"dsgd_images_total", "dsgd_iteration_seconds_count", "go_goroutines"} {
		value(second, name)
	}
	for _, ph := range []string{"forward", "backward"} {
		name := `dsgd_phase_seconds_total{phase="` + ph + `",worker="0"}`
		if a, b := value(first, name), value(second, name); !(a > 0 && b > a) {
			t.Errorf("%s %v then %v: want it to grow", name, a, b)
		}
	}
	tr.cmd.Process.Signal(syscall.SIGINT)
	<-tr.done

	addr, err := freeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	ps := startChild(t, dir, "ps", "ps", "--scheme", "async", "--workers", "1", "--solver", "solver.prototxt", "--threads", "1", "--listen", addr, "--metrics-listen", "127.0.0.1:0")
	w := startChild(t, dir, "worker", "worker", "--scheme", "async", "--rank", "0", "--world", "1", "--center", addr, "--solver", "solver.prototxt", "--threads", "1", "--iters", "300", "--straggle", "p=1:5ms", "--test-interval", "0", "--snapshot-prefix", "none")
	// The server stops once its worker is done: scrape while it trains
	// (at least 1.5 s: 300 iterations of 5 ms or more), until the
	// worker is seen connected, having pulled.
	pulls, connected := 0.0, 0.0
	var during string // a scrape while the worker trains
	for text := scrape(ps); ; {
		// The center's counters appear once the server has built it,
		// the server's own once it listens.
		if strings.Contains(text, "\ndsgd_center_pulls_total ") && strings.Contains(text, "\ndsgd_center_connected_workers ") {
			pulls = max(pulls, value(text, "dsgd_center_pulls_total"))
			if connected = value(text, "dsgd_center_connected_workers"); connected == 1 {
				during = text
			}
		}
		if (pulls > 0 && connected == 1) || !w.running() {
			break
		}
		time.Sleep(20 * time.Millisecond)
		resp, err := http.Get("http://" + addrRE.FindStringSubmatch(ps.out.String())[1] + "/metrics")
		if err != nil {
			break
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(b)
	}
	switch {
	case pulls < 1:
		t.Errorf("dsgd_center_pulls_total stayed %v while a worker trained", pulls)
	case during == "":
		t.Errorf("dsgd_center_connected_workers never 1 while one worker trained (last %v)", connected)
	default:
		// One worker: each push is computed on what it last read.
		if n, sum := value(during, "dsgd_center_push_staleness_count"), value(during, "dsgd_center_push_staleness_sum"); n < 0 || sum != 0 {
			t.Errorf("staleness of a lone worker's %v pushes sums to %v, want 0", n, sum)
		}
		if r := value(during, "dsgd_center_refused_total"); r != 0 {
			t.Errorf("dsgd_center_refused_total %v", r)
		}
	}
	w.wait(t, 60*time.Second)
}
