package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dsgd/protocol/center"
	"dsgd/servers/ps"
)

// servePS serves the center c as a parameter server on addr (an empty
// host means 127.0.0.1) until ctx is done, then returns nil. c must tell
// its parameter count through an N method (center.Local, ps.Sharded do).
// It prints the address it serves on, and each error that closed a
// client's connection, to stdout. Zero timeout and maxFrame take the rpc
// defaults.
// workers (0: unchecked) is the job's worker count; a worker of another
// count, or a second worker with a live worker's rank, is refused.
// run (empty: unchecked) is the job's run settings (train's JoinFields);
// a worker that joins with others is refused, naming the setting.
func servePS(ctx context.Context, addr, token string, c center.Center, workers int, run string, timeout time.Duration, maxFrame int, stdout io.Writer, reg *prometheus.Registry) error {
	var mu sync.Mutex // serialises the connection goroutines' lines
	srv, err := ps.Listen(addr, c, ps.ServerConfig{
		Token:    token,
		Timeout:  timeout,
		MaxFrame: maxFrame,
		Workers:  workers,
		Run:      run,
		Silence:  psSilence(timeout),
		ErrorLog: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stdout, "ps: %v\n", err)
		},
	})
	if err != nil {
		return err
	}
	if reg != nil {
		registerServer(reg, srv)
	}
	mu.Lock()
	fmt.Fprintf(stdout, "ps: serving %d parameters on %s\n", srv.N(), srv.Addr())
	mu.Unlock()
	defer printStaleness(stdout, srv.Staleness)
	return srv.Serve(ctx)
}

// printStaleness prints how stale the server's pushes were, and how many
// had each staleness, once it has served some.
func printStaleness(stdout io.Writer, get func() ps.Staleness) {
	st := get()
	if st.Pushes == 0 {
		return
	}
	var b strings.Builder
	for k, n := range st.Hist {
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		if k == len(st.Hist)-1 {
			fmt.Fprintf(&b, "%d+:%d", k, n)
		} else {
			fmt.Fprintf(&b, "%d:%d", k, n)
		}
	}
	fmt.Fprintf(stdout, "ps: %v (pushes by staleness %s)\n", st, b.String())
}

// psSilence is how long a joined worker may stay silent before the
// server drops it from the center: ps.DefaultSilence, or a third of the
// communication timeout when that is shorter, so that a frozen worker is
// dropped before the healthy ones' waits for it time out.
func psSilence(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout/3 < ps.DefaultSilence {
		return timeout / 3
	}
	return ps.DefaultSilence
}
