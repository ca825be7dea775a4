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
func servePS(ctx context.Context, addr, token string, c center.Center, timeout time.Duration, maxFrame int, stdout io.Writer) error {
	var mu sync.Mutex // serialises the connection goroutines' lines
	srv, err := ps.Listen(addr, c, ps.ServerConfig{
		Token:    token,
		Timeout:  timeout,
		MaxFrame: maxFrame,
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
