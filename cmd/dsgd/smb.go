package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"dsgd/servers/smb"
)

// serveSMB runs the shared buffer server (ShmCaffe's SMB) on addr until
// ctx is done: a fresh in-memory store, served to clients that present
// token. It prints the address it listens on, then one line per
// connection that ended in an error and one per refused rank claim
// (workers, when > 0, is the job's worker count). The store refuses buffers past 3/4
// of this machine's memory (smbMemLimit).
func serveSMB(ctx context.Context, addr, token string, timeout time.Duration, maxFrame, workers int, noShm bool, stdout io.Writer) error {
	var mu sync.Mutex // serialises the error log's writes
	cfg := smb.Config{
		Token:    token,
		Timeout:  timeout,
		MaxFrame: maxFrame,
		Workers:  workers,
		ErrorLog: func(err error) {
			msg := err.Error()
			if !strings.HasPrefix(msg, "smb: ") {
				msg = "smb: " + msg
			}
			mu.Lock()
			fmt.Fprintln(stdout, msg)
			mu.Unlock()
		},
	}
	store := smb.NewStore(smbMemLimit())
	if !noShm {
		store = smb.NewShmStore(smbMemLimit(), "")
	}
	srv, err := smb.Listen(addr, store, cfg)
	if err != nil {
		return err
	}
	mu.Lock()
	fmt.Fprintf(stdout, "smb: serving on %s\n", srv.Addr())
	mu.Unlock()
	return srv.Serve(ctx)
}

// benchSMB measures the server's aggregate read/write bandwidth on
// loopback for each number of clients, each with its own buffer of bytes
// (ShmCaffe IV.B, Fig. 7), beside this machine's memcpy bandwidth for the
// same size, and prints a table.
func benchSMB(ctx context.Context, clients []int, bytes int64, noShm bool, stdout io.Writer) error {
	path := "shared memory (clients on this host map the server's buffers; control over loopback TCP)"
	if noShm {
		path = "loopback TCP (--shm off)"
	}
	fmt.Fprintf(stdout, "smb bandwidth, 50%% writes and 50%% reads of each client's whole buffer, over %s\n", path)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "clients\tbuffer\tGB/s aggregate\tmemcpy GB/s\tratio\t\n")
	for _, k := range clients {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := smb.Bandwidth(ctx, smb.BenchConfig{Clients: k, Bytes: bytes, NoShm: noShm})
		if err != nil {
			return fmt.Errorf("smb bandwidth with %d clients: %w", k, err)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.2f\t%.1f%%\t\n", k, smbSizeString(r.Bytes), r.GBps, r.MemcpyGBps, 100*r.Ratio())
	}
	return tw.Flush()
}

// smbSizeString prints a byte count in the largest binary unit that divides it.
func smbSizeString(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

// smbMemLimit is 3/4 of MemTotal in /proc/meminfo, so that clients
// creating buffers get an error rather than the server being killed for
// memory; 0 (no limit) where that file cannot be read.
func smbMemLimit() int64 { return memTotal() / 4 * 3 }
