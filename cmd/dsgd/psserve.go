package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"dsgd/center"
	"dsgd/ps"
)

// servePS serves the center c as a parameter server on addr (an empty
// host means 127.0.0.1) until ctx is done, then returns nil. c must tell
// its parameter count through an N method (center.Local, ps.Sharded do).
// It prints the address it serves on, and each error that closed a
// client's connection, to stdout. Zero timeout and maxFrame take the rpc
// defaults.
// workers (0: unchecked) is the job's worker count; a worker of another
// count, or a second worker with a live worker's rank, is refused.
func servePS(ctx context.Context, addr, token string, c center.Center, workers int, timeout time.Duration, maxFrame int, stdout io.Writer) error {
	var mu sync.Mutex // serialises the connection goroutines' lines
	srv, err := ps.Listen(addr, c, ps.ServerConfig{
		Token:    token,
		Timeout:  timeout,
		MaxFrame: maxFrame,
		Workers:  workers,
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
	mu.Lock()
	fmt.Fprintf(stdout, "ps: serving %d parameters on %s\n", srv.N(), srv.Addr())
	mu.Unlock()
	return srv.Serve(ctx)
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
