package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"dsgd/comm/netguard"
	"dsgd/training/metrics"
	"dsgd/training/prom"
	"dsgd/training/train"
)

// Observe adds to deps the hooks that measure and export tr's run, deps
// already connected (train.Connect): over a group's endpoint, a scheme
// with outer steps (diloco, streaming-diloco), whose point is the bytes
// of its busiest step, measures that step (the PeakStep returned; nil
// otherwise); pr, when not nil, exports the training gauges, the
// iterations' and tests' figures and the endpoint's traffic.
func Observe(tr *train.Trainer, deps *train.Deps, pr *prom.Run) *metrics.PeakStep {
	var peak *metrics.PeakStep
	if ep := deps.Endpoint; ep != nil && tr.SchemeConfig().Info().Outer {
		peak = metrics.NewPeakStep(func() int64 { return ep.Stats().BytesSent })
		deps.OnIter = peak.Wrap(deps.OnIter)
	}
	if pr != nil {
		deps.OnIter = pr.OnIter(tr.GlobalBatch(), deps.OnIter)
		deps.OnIterMetrics = pr.OnIterMetrics
		deps.OnTest = pr.OnTest
		if deps.Endpoint != nil {
			pr.RegisterEndpoint(deps.Endpoint)
		}
	}
	return peak
}

// serveMetrics serves reg's metrics on addr (RunOptions.MetricsListen)
// at /metrics until ctx ends and returns the address it listens on. An
// empty host is loopback; a host beyond it is served with a warning to
// stderr, named by names.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, stderr io.Writer, names func(string) string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("RunOptions.MetricsListen %q: %v (want HOST:PORT)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return "", fmt.Errorf("RunOptions.MetricsListen: %w", err)
	}
	if !netguard.IsLoopback(ln.Addr().String()) {
		fmt.Fprintf(stderr, "dsgd: warning: %s\n", names(fmt.Sprintf("RunOptions.MetricsListen %s serves metrics beyond loopback, without authentication", ln.Addr())))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "dsgd: %s\n", names(fmt.Sprintf("RunOptions.MetricsListen: %v", err)))
		}
	}()
	context.AfterFunc(ctx, func() { srv.Close() })
	return ln.Addr().String(), nil
}
