package main

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
)

// metricsListenUsage is --metrics-listen's usage line.
const metricsListenUsage = "serve Prometheus metrics on `HOST:PORT` at /metrics (an empty host is 127.0.0.1; a host beyond loopback must be given explicitly)"

// serveMetrics serves reg's metrics on addr until ctx ends and returns
// the address it listens on. An empty host is loopback.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, stderr io.Writer) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics-listen %q: %v (want HOST:PORT)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return "", fmt.Errorf("--metrics-listen: %w", err)
	}
	if !netguard.IsLoopback(ln.Addr().String()) {
		fmt.Fprintf(stderr, "dsgd: warning: --metrics-listen %s serves metrics beyond loopback, without authentication\n", ln.Addr())
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "dsgd: --metrics-listen: %v\n", err)
		}
	}()
	context.AfterFunc(ctx, func() { srv.Close() })
	return ln.Addr().String(), nil
}
