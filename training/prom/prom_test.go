package prom

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"dsgd/comm/transport"
	"dsgd/training/metrics"
)

// TestMetricsEndpointBytes: the transport counters read the endpoint's
// own counts at every scrape.
func TestMetricsEndpointBytes(t *testing.T) {
	eps := transport.NewInproc(2)
	p := New()
	p.RegisterEndpoint(eps[0])
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
	p := New()
	p.OnIterMetrics(metrics.IterMetrics{Kind: "train", Rank: 0, Iter: 9, LR: 0.05, Epoch: 0.625, ForwardMS: 1})
	p.OnIterMetrics(metrics.IterMetrics{Kind: "train", Rank: 1, Iter: 9, LR: 7, Epoch: 7})
	p.OnTest(metrics.TestResult{Iter: 10, Outputs: []metrics.NamedValue{{Name: "accuracy", Value: 0.9}, {Name: "loss", Value: 0.3}, {Name: "net1/accuracy", Value: 0.8, Net: 1}}})
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
