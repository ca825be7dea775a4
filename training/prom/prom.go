package prom

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"dsgd/comm/transport"
	"dsgd/protocol/center"
	"dsgd/training/metrics"
)

// Run holds the training metrics of one process, in a registry of
// their own.
type Run struct {
	reg                   *prometheus.Registry
	iter, loss, imagesSec prometheus.Gauge
	lr, epoch             prometheus.Gauge
	testOutput            *prometheus.GaugeVec
	iters, images         prometheus.Counter
	iterSeconds           prometheus.Histogram
	phaseSeconds          *prometheus.CounterVec
}

// New registers the training metrics, and the Go runtime's and
// the process's, in a registry of their own.
func New() *Run {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p := &Run{
		reg:       reg,
		iter:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "dsgd_iteration", Help: "Iterations completed (absolute, counting a resumed run's start)."}),
		loss:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "dsgd_loss", Help: "Training loss of the last iteration (rank 0)."}),
		imagesSec: prometheus.NewGauge(prometheus.GaugeOpts{Name: "dsgd_images_per_second", Help: "Training images per second over the last iteration, all workers."}),
		iters:     prometheus.NewCounter(prometheus.CounterOpts{Name: "dsgd_iterations_total", Help: "Iterations run by this process."}),
		images:    prometheus.NewCounter(prometheus.CounterOpts{Name: "dsgd_images_total", Help: "Training images consumed, all workers."}),
		iterSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dsgd_iteration_seconds", Help: "Wall time of one training iteration of rank 0.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 20)}),
	}
	p.phaseSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dsgd_phase_seconds_total",
		Help: "Wall time per phase of an iteration (data, forward, backward, comm_exposed, comm_busy, update, wait), per worker of this process; comm_busy overlaps the others."},
		[]string{"worker", "phase"})
	p.lr = prometheus.NewGauge(prometheus.GaugeOpts{Name: "dsgd_learning_rate", Help: "Learning rate of the last iteration's update (rank 0)."})
	p.epoch = prometheus.NewGauge(prometheus.GaugeOpts{Name: "dsgd_epoch", Help: "Epochs of the training set seen by the run, all workers (0 when the set's size is unknown)."})
	p.testOutput = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dsgd_test_output",
		Help: "Each scalar output (accuracy, loss) of each test net at the last test pass, averaged over the pass; net counts from 0."},
		[]string{"net", "output"})
	reg.MustRegister(p.iter, p.loss, p.imagesSec, p.iters, p.images, p.iterSeconds, p.phaseSeconds, p.lr, p.epoch, p.testOutput, buildInfo())
	return p
}

// buildInfo is the dsgd_build_info gauge: 1, labelled with the module's
// version, the VCS revision it was built from, and the Go version.
func buildInfo() prometheus.Collector {
	version, revision, goVersion := "unknown", "unknown", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = cmp.Or(bi.Main.Version, version)
		goVersion = cmp.Or(bi.GoVersion, goVersion)
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "dsgd_build_info",
		Help:        "Always 1; its labels say which dsgd runs: the module version, the VCS revision and the Go version it was built with.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion}})
	g.Set(1)
	return g
}

// OnTest is the train.Deps.OnTest hook: the last test pass's outputs.
func (p *Run) OnTest(tr metrics.TestResult) {
	for _, o := range tr.Outputs {
		p.testOutput.WithLabelValues(strconv.Itoa(o.Net), o.Output()).Set(o.Value)
	}
}

// OnIterMetrics is the train.Deps.OnIterMetrics hook that adds
// each worker's phase times; it is called on every worker's goroutine
// (the counters are safe for that).
func (p *Run) OnIterMetrics(m metrics.IterMetrics) {
	if m.Rank == 0 {
		p.lr.Set(m.LR)
		p.epoch.Set(m.Epoch)
	}
	w := strconv.Itoa(m.Rank)
	for _, ph := range []struct {
		name string
		ms   float64
	}{{"data", m.DataMS}, {"forward", m.ForwardMS}, {"backward", m.BackMS}, {"comm_exposed", m.CommMS},
		{"comm_busy", m.CommBusy}, {"update", m.UpdateMS}, {"wait", m.WaitMS}} {
		if ph.ms > 0 {
			p.phaseSeconds.WithLabelValues(w, ph.name).Add(ph.ms / 1e3)
		}
	}
}

// RegisterEndpoint adds the bytes and messages this process's endpoint
// moved, read at every scrape (the transports count with atomics).
func (p *Run) RegisterEndpoint(ep transport.Endpoint) {
	counter := func(name, help string, f func(transport.Stats) int64) {
		p.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(ep.Stats())) }))
	}
	counter("dsgd_transport_sent_bytes_total", "Bytes this rank sent to its peers.", func(s transport.Stats) int64 { return s.BytesSent })
	counter("dsgd_transport_received_bytes_total", "Bytes this rank received from its peers.", func(s transport.Stats) int64 { return s.BytesRecv })
	counter("dsgd_transport_sent_messages_total", "Messages this rank sent to its peers.", func(s transport.Stats) int64 { return s.MsgsSent })
	counter("dsgd_transport_received_messages_total", "Messages this rank received from its peers.", func(s transport.Stats) int64 { return s.MsgsRecv })
}

// OnIter returns the train.Deps.OnIter hook that updates the metrics;
// imagesPerIter is the global batch.
func (p *Run) OnIter(imagesPerIter int, next func(int, float64, time.Duration)) func(int, float64, time.Duration) {
	return func(iter int, loss float64, d time.Duration) {
		p.iter.Set(float64(iter + 1))
		p.loss.Set(loss)
		p.iters.Inc()
		p.images.Add(float64(imagesPerIter))
		p.iterSeconds.Observe(d.Seconds())
		if d > 0 {
			p.imagesSec.Set(float64(imagesPerIter) / d.Seconds())
		}
		if next != nil {
			next(iter, loss, d)
		}
	}
}

// RegisterCenter adds a center's counters, read at every scrape.
func RegisterCenter(reg *prometheus.Registry, stats func() center.Stats) {
	counter := func(name, help string, f func(center.Stats) int64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(stats())) }))
	}
	counter("dsgd_center_pulls_total", "Weight pulls served by the center.", func(s center.Stats) int64 { return s.Pulls })
	counter("dsgd_center_pushes_total", "Updates pushed to the center.", func(s center.Stats) int64 { return s.Pushes })
	counter("dsgd_center_exchanges_total", "Elastic exchanges with the center.", func(s center.Stats) int64 { return s.Exchanges })
	counter("dsgd_center_rounds_total", "Weed-out rounds closed.", func(s center.Stats) int64 { return s.Rounds })
	counter("dsgd_center_dropped_total", "Gradients dropped as late (weed-out).", func(s center.Stats) int64 { return s.Dropped })
	counter("dsgd_center_refused_total", "Updates refused as non-finite or too large (the worker is named in the log).", func(s center.Stats) int64 { return s.Refused })
	counter("dsgd_center_waits_total", "Clock calls that waited for a slower worker (ssp).", func(s center.Stats) int64 { return s.Waits })
	counter("dsgd_center_update_staleness_total", "Staleness of the updates (pushes, elastic exchanges) summed: the updates the center took between each worker's read and its update; divide by dsgd_center_staleness_measured_total for the mean.", func(s center.Stats) int64 { return s.Stale })
	counter("dsgd_center_staleness_measured_total", "Updates whose staleness was measured.", func(s center.Stats) int64 { return s.StaleN })
	counter("dsgd_center_bytes_total", "Bytes of float32 values through the center, both ways.", func(s center.Stats) int64 { return 4 * s.Values })
}

// Registry is p's registry, nil for no Run.
func (p *Run) Registry() *prometheus.Registry {
	if p == nil {
		return nil
	}
	return p.reg
}
