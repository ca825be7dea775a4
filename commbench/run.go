package commbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"dsgd/collective"
)

// Options say what Run measures: the command's flags, parsed.
type Options struct {
	// Parts are the parts to run: "mem", "allreduce", "ps".
	Parts map[string]bool
	// Worlds are the allreduce part's group sizes; Sizes its buffer
	// sizes in bytes (whole float32s, at most MaxBytes).
	Worlds []int
	Sizes  []int64
	// Alg is the allreduce algorithm of dsgd's schedules.
	Alg collective.Algorithm
	// Reps timed repetitions per size after Warmup untimed ones (the
	// gloo peer gets the same).
	Reps, Warmup int
	// InprocMax is the largest size run in-process.
	InprocMax int64
	// MemBytes is the memcpy and add bandwidth's buffer size.
	MemBytes int64
	// PSWorkers are the worker counts p of the parameter server vs tree
	// part, PSFloats its model size, PSReps and PSWarmup its iterations;
	// TCPMaxWorkers the largest p it runs over TCP.
	PSWorkers        []int
	PSFloats         int
	PSReps, PSWarmup int
	TCPMaxWorkers    int
	// Peer is the gloo peer's script ("none": not run), Python the
	// interpreter with torch (and mpi4py for MPIPeer).
	Peer, Python string
	// Timeout bounds each group of processes (and each peer run);
	// CommWait is a TCP rank's timeout on one message or on joining.
	Timeout, CommWait time.Duration
	// Paths are the allreduce table's columns (see PathNames).
	Paths map[string]bool
	// MPIPeer is Open MPI's peer script, or "none".
	MPIPeer string

	glooHeader string // the gloo peer's version line, once run
}

// Run runs the parts o chooses and writes their tables to stdout, its
// progress to stderr. A failed peer is reported after ours are written.
func Run(ctx context.Context, o *Options, stdout, stderr io.Writer) error {
	start := time.Now()
	fmt.Fprintf(stdout, "bench-comm: %s, %d CPUs, GOMAXPROCS %d, %s %s/%s, load average %s\n",
		start.Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, loadAvg())
	if o.Parts["mem"] {
		c, a := memBandwidth(o.MemBytes, 10)
		fmt.Fprintf(stdout, "\nmemory, %s MiB buffers, one goroutine, median of 10:\n", FmtMiB(o.MemBytes))
		fmt.Fprintf(stdout, "  memcpy (copy)             %7.2f GB/s  (bytes copied per s; memory traffic is twice that)\n", c)
		fmt.Fprintf(stdout, "  float32 add dst += src    %7.2f GB/s  (bytes of dst per s, plain Go loop; %.2f Gadd/s)\n", a, a/4)
	}
	var peerErr error
	if o.Parts["allreduce"] {
		if err := allreduceTable(ctx, o, stdout, stderr, &peerErr); err != nil {
			return err
		}
	}
	if o.Parts["ps"] {
		if err := psTable(ctx, o, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nbench-comm: done in %.0f s, load average %s\n", time.Since(start).Seconds(), loadAvg())
	if peerErr != nil {
		return fmt.Errorf("the peer failed (ours are above): %w", peerErr)
	}
	return nil
}

// memBandwidth measures copy and the plain Go add over buffers of nbytes,
// median of reps, in GB/s of buffer bytes (the memory traffic is twice
// that for copy, three times for add).
func memBandwidth(nbytes int64, reps int) (copyGBs, addGBs float64) {
	n := int(nbytes / 4)
	src, dst := make([]float32, n), make([]float32, n)
	fillF32(src, 1)
	fillF32(dst, 0)
	ct, at := make([]float64, reps), make([]float64, reps)
	for i := range reps {
		t0 := time.Now()
		copy(dst, src)
		ct[i] = time.Since(t0).Seconds()
	}
	for i := range reps {
		t0 := time.Now()
		addF32(dst, src)
		at[i] = time.Since(t0).Seconds()
	}
	return float64(nbytes) / medianF64(ct) / 1e9, float64(nbytes) / medianF64(at) / 1e9
}

// psModel and treeModel are the collective package's patterns for the
// PS-vs-tree table; the schedules are fixed and verified by its tests.
func psModel(p, n int) collective.Pattern { return mustPattern(collective.ParamServerPattern(p, n)) }

func treeModel(p, n int) collective.Pattern { return mustPattern(collective.TreePattern(p, n)) }

func mustPattern(m collective.Pattern, err error) collective.Pattern {
	if err != nil {
		panic("bench-comm: " + err.Error())
	}
	return m
}

// loadAvg returns /proc/loadavg's first three fields, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// psPoint is one measured p of the PS-vs-tree part.
type psPoint struct {
	p        int
	ps, tree float64 // seconds; NaN when not run
}

func psTable(ctx context.Context, o *Options, stdout, stderr io.Writer) error {
	n := o.PSFloats
	nb := int64(4 * n)
	fmt.Fprintf(stdout, "\nparameter server vs reduction tree (FireCaffe Fig. 4): communication per iteration, %.1f MB model (%d float32)\n", float64(nb)/1e6, n)
	fmt.Fprintf(stdout, "PS: each of p workers sends its gradient to a server (one more rank: p+1 in all), which receives them in rank order summing as it goes, then sends the sum to each worker in turn (scheme sync-ps's messages)\n")
	fmt.Fprintf(stdout, "tree: collective.Tree allreduce over the p workers (binomial reduce to rank 0, then broadcast)\n")
	fmt.Fprintf(stdout, "time: median over %d iterations (after %d warm-up) of the max over ranks; rel = time / time at p=%d\n", o.PSReps, o.PSWarmup, o.PSWorkers[0])
	fmt.Fprintf(stdout, "model: alpha*msgs + beta*bytes, msgs = sequential messages on the critical path and bytes = bytes sent+received by the busiest rank, both from the schedules (Verify, Cost); alpha, beta fitted from a 2-rank ping-pong (4 B and the model) on the same transport\n")
	fmt.Fprintf(stdout, "tcp runs p up to %d (PS: p+1 processes); every rank shares this machine's %d cores, so transfers the tree runs in parallel compete for the same CPUs and memory bus\n", o.TCPMaxWorkers, runtime.NumCPU())
	for _, tr := range []string{"inproc", "tcp"} {
		run := func(world int, job commJob) (map[commKey]commStat, error) {
			var res []commResult
			var err error
			if tr == "tcp" {
				res, err = runTCPGroup(ctx, o, world, job, nil)
			} else {
				res, err = runInprocGroup(ctx, world, job, o.Timeout)
			}
			if err != nil {
				return nil, err
			}
			st, err := aggregateComm(res, world)
			if err != nil {
				return nil, fmt.Errorf("%s %s, %d ranks: %w", tr, job.Task, world, err)
			}
			for k, s := range st {
				if !s.OK {
					return nil, fmt.Errorf("%s %s, %d ranks, %d bytes: wrong result", tr, k.task, world, k.bytes)
				}
			}
			return st, nil
		}
		fmt.Fprintf(stderr, "bench-comm: ping-pong %s...\n", tr)
		pp, err := run(2, commJob{Task: taskPingPong, Sizes: []int64{4, nb}, Reps: max(o.PSReps, 5), Warmup: max(o.PSWarmup, 1)})
		if err != nil {
			return err
		}
		alpha := pp[commKey{taskPingPong, 4}].R0Med
		beta := max((pp[commKey{taskPingPong, nb}].R0Med-alpha)/float64(nb), 1e-15)
		var pts []psPoint
		for _, p := range o.PSWorkers {
			pt := psPoint{p: p, ps: math.NaN(), tree: math.NaN()}
			if tr == "tcp" && p > o.TCPMaxWorkers {
				pts = append(pts, pt)
				continue
			}
			job := commJob{Sizes: []int64{nb}, Reps: o.PSReps, Warmup: o.PSWarmup}
			fmt.Fprintf(stderr, "bench-comm: %s p=%d tree and PS...\n", tr, p)
			job.Task = taskTree
			st, err := run(p, job)
			if err != nil {
				return err
			}
			pt.tree = st[commKey{taskTree, nb}].Med
			job.Task = taskPS
			if st, err = run(p+1, job); err != nil {
				return err
			}
			pt.ps = st[commKey{taskPS, nb}].Med
			pts = append(pts, pt)
		}
		fmt.Fprintf(stdout, "\n%s: alpha %.1f us, beta^-1 %.2f GB/s (one-way ping-pong: 4 B %.3f ms, %.1f MB %.3f ms)\n",
			tr, alpha*1e6, 1/beta/1e9, alpha*1e3, float64(nb)/1e6, pp[commKey{taskPingPong, nb}].R0Med*1e3)
		fmt.Fprintf(stdout, "%-7s %3s %9s %6s %9s %6s %7s | %8s %8s %8s %6s | %9s %8s %8s %6s | %9s %9s\n",
			"", "p", "PS_ms", "rel", "tree_ms", "rel", "PS/tree",
			"PS_msgs", "PS_MB", "PS_ms", "rel", "tree_msgs", "tree_MB", "tree_ms", "rel", "PS_totMB", "tree_totMB")
		fmt.Fprintf(stdout, "%-7s %3s %9s %6s %9s %6s %7s | %33s | %34s | %19s\n", "", "", "measured", "", "", "", "", "alpha-beta model (PS)", "alpha-beta model (tree)", "all ranks' bytes")
		base := pts[0]
		bpm, btm := psModel(base.p, n), treeModel(base.p, n)
		for _, pt := range pts {
			pm, tm := psModel(pt.p, n), treeModel(pt.p, n)
			meas := fmt.Sprintf("%9s %6s %9s %6s %7s", "-", "-", "-", "-", "-")
			if !math.IsNaN(pt.ps) {
				meas = fmt.Sprintf("%9.2f %6.2f %9.2f %6.2f %7.2f", pt.ps*1e3, pt.ps/base.ps, pt.tree*1e3, pt.tree/base.tree, pt.ps/pt.tree)
			}
			fmt.Fprintf(stdout, "%-7s %3d %s | %8d %8.1f %8.2f %6.2f | %9d %8.1f %8.2f %6.2f | %9.1f %9.1f\n",
				tr, pt.p, meas,
				pm.Msgs, float64(pm.MaxBytes)/1e6, pm.Predict(alpha, beta)*1e3, pm.Predict(alpha, beta)/bpm.Predict(alpha, beta),
				tm.Msgs, float64(tm.MaxBytes)/1e6, tm.Predict(alpha, beta)*1e3, tm.Predict(alpha, beta)/btm.Predict(alpha, beta),
				float64(pm.TotalBytes)/1e6, float64(tm.TotalBytes)/1e6)
		}
	}
	return nil
}
