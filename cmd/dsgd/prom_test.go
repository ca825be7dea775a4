package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"dsgd/comm/transport"
	"dsgd/training/train"
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

// TestMetricsEndpointBytes: the transport counters read the endpoint's
// own counts at every scrape.
func TestMetricsEndpointBytes(t *testing.T) {
	eps := transport.NewInproc(2)
	p := newPromRun()
	p.registerEndpoint(eps[0])
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- eps[1].Recv(ctx, 0, 7, make([]float32, 1000)) }()
	if err := eps[0].Send(ctx, 1, 7, make([]float32, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := float64(eps[0].Stats().BytesSent)
	if want < 4000 {
		t.Fatalf("inproc counted %v bytes for 1000 floats", want)
	}
	mfs, err := p.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, mf := range mfs {
		if mf.GetName() == "dsgd_transport_sent_bytes_total" {
			seen = true
			if v := mf.GetMetric()[0].GetCounter().GetValue(); v != want {
				t.Errorf("dsgd_transport_sent_bytes_total %v, the endpoint says %v", v, want)
			}
		}
	}
	if !seen {
		t.Error("no dsgd_transport_sent_bytes_total")
	}
}

// TestPromTrainingGauges: the test outputs, learning rate, epoch and
// build info are served, and every series passes promtool's lint.
func TestPromTrainingGauges(t *testing.T) {
	p := newPromRun()
	p.onIterMetrics(train.IterMetrics{Kind: "train", Rank: 0, Iter: 9, LR: 0.05, Epoch: 0.625, ForwardMS: 1})
	p.onIterMetrics(train.IterMetrics{Kind: "train", Rank: 1, Iter: 9, LR: 7, Epoch: 7})
	p.onTest(train.TestResult{Iter: 10, Outputs: []train.NamedValue{{Name: "accuracy", Value: 0.9}, {Name: "loss", Value: 0.3}, {Name: "net1/accuracy", Value: 0.8, Net: 1}}})
	mfs, err := p.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			if g := m.GetGauge(); g != nil {
				got[key] = g.GetValue()
			}
		}
	}
	for key, want := range map[string]float64{
		"dsgd_learning_rate":                     0.05,
		"dsgd_epoch":                             0.625,
		"dsgd_test_output,net=0,output=accuracy": 0.9,
		"dsgd_test_output,net=0,output=loss":     0.3,
		"dsgd_test_output,net=1,output=accuracy": 0.8,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	info := ""
	for key, v := range got {
		if strings.HasPrefix(key, "dsgd_build_info,") && v == 1 {
			info = key
		}
	}
	if !regexp.MustCompile(`goversion=go[0-9.]+.*,revision=[^,]+,version=[^,]+`).MatchString(info) {
		t.Errorf("dsgd_build_info: %q", info)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range problems {
		t.Errorf("promlint: %s: %s", pr.Metric, pr.Text)
	}
}
