package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"dsgd/servers/smb"
)

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
