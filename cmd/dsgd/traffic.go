package main

import (
	"fmt"
	"io"
	"time"

	"dsgd/comm/transport"
	"dsgd/training/train"
)

// printTraffic writes one line of what this rank of a multi-process
// group moved over its transport and how long its communication took,
// so that each rank's share of the links can be read off its output:
// payload bytes each way (frame headers and the set-up excluded), and
// the effective rate while communicating.
func printTraffic(w io.Writer, rank, world int, st transport.Stats, res *train.Result) {
	busy := res.CommBusy
	ms := float64(busy) / float64(time.Millisecond)
	per := 0.0
	if res.Iters > 0 {
		per = ms / float64(res.Iters)
	}
	rate := 0.0
	if busy > 0 {
		rate = float64(st.BytesSent+st.BytesRecv) / busy.Seconds() / 1e6
	}
	fmt.Fprintf(w, "traffic (rank %d of %d): sent %d bytes in %d messages, received %d bytes in %d messages; communication busy %.1f ms over %d iterations (%.2f ms/iter), %.1f MB/s both ways while busy\n",
		rank, world, st.BytesSent, st.MsgsSent, st.BytesRecv, st.MsgsRecv, ms, res.Iters, per, rate)
}
