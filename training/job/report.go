package job

import (
	"fmt"
	"io"
	"strings"
	"time"

	"dsgd/comm/compress"
	"dsgd/comm/transport"
	"dsgd/protocol/center"
	"dsgd/training/train"
)

// WriteSummary writes a finished run's summary: images/s over the
// training time and the wall time beside it, the final test, the time
// per iteration by phase, the communication of a run of several workers,
// the center's counts, the straggler's delays and the snapshots.
func WriteSummary(w io.Writer, res *train.Result) {
	// images/s and the time it divides by on one line, the wall time
	// (tests and snapshots included) beside it, each named.
	fmt.Fprintf(w, "\ndone: %d iterations (from %d): %.0f images/s over %s of training; %s wall with tests and snapshots\n", res.Iters, res.Start, res.ImagesPerSec, res.TrainTime.Round(time.Millisecond), res.Wall.Round(time.Millisecond))
	if f := res.Final(); len(f.Outputs) > 0 {
		fmt.Fprintf(w, "final test:")
		for _, o := range f.Outputs {
			fmt.Fprintf(w, "  %s %.4f", o.Name, o.Value)
		}
		fmt.Fprintln(w)
	}
	if res.Iters > 0 {
		fmt.Fprintf(w, "time per training iteration, by phase (rank 0):\n")
		res.Phases.WriteTable(w)
	}
	if res.Workers > 1 && res.Iters > 0 {
		it := float64(res.Iters)
		busy := float64(res.CommBusy) / float64(time.Millisecond) / it
		exposed := float64(res.CommExposed) / float64(time.Millisecond) / it
		total := float64(res.Phases.Sum()) / float64(time.Millisecond) / it
		fmt.Fprintf(w, "communication (rank 0): %.3f ms/iter busy, %.3f ms/iter exposed; communication ratio %.1f%% (exposed / iteration)\n", busy, exposed, 100*exposed/total)
		if res.IdenticalKnown {
			fmt.Fprintf(w, "replicas identical at the end: %v\n", res.Identical)
		}
	}
	if c := res.Center; c != (center.Stats{}) {
		fmt.Fprintf(w, "center: %d pulls, %d pushes, %d elastic exchanges, %d rounds, %d gradients dropped (weed-out), %d waits for a slower worker (ssp)%s\n",
			c.Pulls, c.Pushes, c.Exchanges, c.Rounds, c.Dropped, c.Waits, StaleText(c))
		if res.Iters > 0 {
			fmt.Fprintf(w, "center traffic: %.2f MB per iteration of rank 0 (all workers, both ways)\n", float64(4*c.Values)/float64(res.Iters)/1e6)
		}
	}
	if res.Straggled > 0 {
		fmt.Fprintf(w, "straggler: %d iterations delayed\n", res.Straggled)
	}
	for _, s := range res.Snapshots {
		fmt.Fprintf(w, "snapshot: %s\n", s)
	}
}

// StaleText is ", update staleness mean M (max X) ..." for a center that
// took updates, else "".
func StaleText(st center.Stats) string {
	if st.StaleN == 0 {
		return ""
	}
	return fmt.Sprintf(", update staleness mean %.2f (max %d) center updates between a worker's read and its update", st.MeanStale(), st.MaxStale)
}

// FailedWorkers is the error of a run that finished although some of
// its in-process asynchronous workers failed on the way: the others
// trained on, but the exit status says it. nil when none failed.
func FailedWorkers(failed []error) error {
	if len(failed) == 0 {
		return nil
	}
	msgs := make([]string, len(failed))
	for i, err := range failed {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("%d of the workers failed during the run (the others finished it; the snapshot holds the center's weights):\n%s", len(failed), strings.Join(msgs, "\n"))
}

// CompressHeader is the header's line on the gradient compressor, ""
// without one: which runs, after how many plain iterations, and what one
// compressed iteration hands to the collectives per worker against the
// float32 gradients. It names Config's fields.
func CompressHeader(tr *train.Trainer, cfg train.Config) string {
	if !cfg.Compress.Gradient() {
		return ""
	}
	c, p := tr.CompressFloats()
	ratio := 0.0
	if c > 0 {
		ratio = float64(p) / float64(c)
	}
	var b strings.Builder
	if cfg.Info().ServerUpdates {
		fmt.Fprintf(&b, "dsgd: Config.Compress %s with error feedback after %d plain iterations (Config.CompressWarmup): each worker pushes %d values per iteration to the server instead of %d float32 gradients (%.1fx fewer)\n", cfg.Compress, cfg.CompressWarmup, c, p, ratio)
		return b.String()
	}
	fmt.Fprintf(&b, "dsgd: Config.Compress %s with error feedback after %d plain iterations (Config.CompressWarmup): each worker hands the collectives %d values per iteration instead of %d float32 gradients (%.1fx fewer)", cfg.Compress, cfg.CompressWarmup, c, p, ratio)
	switch cfg.Compress.Kind {
	case compress.BF16:
		fmt.Fprint(&b, "; bf16 values still travel as float32, so the wire carries as much")
	case compress.TopK, compress.Sign:
		fmt.Fprintf(&b, "; %s's values travel by an allgather, whose bytes grow with the workers", cfg.Compress.Kind)
	}
	b.WriteString("\n")
	return b.String()
}

// WriteCompressed writes what worker 0's compressor sent: bytes per
// compressed and per plain iteration as its transport counted them, and
// their ratio. Nothing without a compressor.
func WriteCompressed(w io.Writer, res *train.Result, cfg train.Config) {
	if !cfg.Compress.Gradient() || res == nil {
		return
	}
	st := res.Compress
	plainIters := res.Iters - res.CompressIters
	if st.Bytes < 0 {
		fmt.Fprintf(w, "compress: %s over shared memory or MPI's own collectives: the bytes are not counted (%d values handed to the collectives per compressed iteration)\n", cfg.Compress, perIter(st.Floats, res.CompressIters))
		return
	}
	fmt.Fprintf(w, "compress: %s: worker 0 sent %d bytes per compressed iteration (%d iterations)", cfg.Compress, perIter(st.Bytes, res.CompressIters), res.CompressIters)
	if plainIters > 0 && st.PlainBytes > 0 {
		pb := perIter(st.PlainBytes, plainIters)
		fmt.Fprintf(w, ", %d per plain float32 iteration (%d)", pb, plainIters)
		if cb := perIter(st.Bytes, res.CompressIters); cb > 0 {
			fmt.Fprintf(w, ": %.1fx fewer bytes", float64(pb)/float64(cb))
		}
	}
	fmt.Fprintln(w)
}

// perIter is total over iters, 0 for no iterations.
func perIter(total int64, iters int) int64 {
	if iters <= 0 {
		return 0
	}
	return total / int64(iters)
}

// WriteTraffic writes one line of what this rank of a multi-process
// group moved over its transport and how long its communication took,
// so that each rank's share of the links can be read off its output:
// payload bytes each way (frame headers and the set-up excluded), and
// the effective rate while communicating.
func WriteTraffic(w io.Writer, rank, world int, st transport.Stats, res *train.Result) {
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

// WriteLinks writes, after a worker's time split, what each kind of
// link of its endpoint carried: one line per kind (shm, tcp) that
// reaches at least one peer,
//
//	link shm (rank 0): 1 peer(s), sent 12.345 MB, received 12.345 MB, busy 53.2 ms (0.532 ms/iter)
//
// with MB = 1e6 bytes of payload, and busy the time its sends and
// receives took (waits for the peer included; concurrent calls each
// count). Nothing for an in-process run (ep nil).
func WriteLinks(w io.Writer, ep transport.Endpoint, iters int) {
	if ep == nil {
		return
	}
	for _, l := range transport.Links(ep) {
		busy := float64(l.Busy) / float64(time.Millisecond)
		per := ""
		if iters > 0 {
			per = fmt.Sprintf(" (%.3f ms/iter)", busy/float64(iters))
		}
		fmt.Fprintf(w, "link %s (rank %d): %d peer(s), sent %.3f MB, received %.3f MB, busy %.1f ms%s\n",
			l.Kind, ep.Rank(), l.Peers, float64(l.BytesSent)/1e6, float64(l.BytesRecv)/1e6, busy, per)
	}
}
