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

	"dsgd/comm/collective"
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

// Run runs the parts o chooses and hands each part's results to report
// as soon as they are measured (the run's header first, its footer last);
// its progress goes to stderr. A failed peer is reported after ours are
// handed over.
func Run(ctx context.Context, o *Options, stderr io.Writer, report func(Section)) error {
	start := time.Now()
	report(Section{Part: "header", Blocks: []Block{{Lines: []string{fmt.Sprintf("bench-comm: %s, %d CPUs, GOMAXPROCS %d, %s %s/%s, load average %s",
		start.Format("2006-01-02 15:04"), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, loadAvg())}}}})
	if o.Parts["mem"] {
		c, a := memBandwidth(o.MemBytes, 10)
		report(Section{Part: "mem", Blocks: []Block{{Lines: []string{"",
			fmt.Sprintf("memory, %s MiB buffers, one goroutine, median of 10:", FmtMiB(o.MemBytes)),
			fmt.Sprintf("  memcpy (copy)             %7.2f GB/s  (bytes copied per s; memory traffic is twice that)", c),
			fmt.Sprintf("  float32 add dst += src    %7.2f GB/s  (bytes of dst per s, plain Go loop; %.2f Gadd/s)", a, a/4)}}}})
	}
	var peerErr error
	if o.Parts["allreduce"] {
		sec, err := allreduceTable(ctx, o, stderr, &peerErr)
		if err != nil {
			return err
		}
		report(sec)
	}
	if o.Parts["ps"] {
		sec, err := psTable(ctx, o, stderr)
		if len(sec.Blocks) > 0 {
			report(sec) // what was measured before a failure
		}
		if err != nil {
			return err
		}
	}
	report(Section{Part: "footer", Blocks: []Block{{Lines: []string{"", fmt.Sprintf("bench-comm: done in %.0f s, load average %s", time.Since(start).Seconds(), loadAvg())}}}})
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

// psTable runs the parameter server vs tree part; on a failure it returns
// the section as far as it got.
func psTable(ctx context.Context, o *Options, stderr io.Writer) (Section, error) {
	n := o.PSFloats
	nb := int64(4 * n)
	sec := Section{Part: "ps"}
	sec.text("",
		fmt.Sprintf("parameter server vs reduction tree (FireCaffe Fig. 4): communication per iteration, %.1f MB model (%d float32)", float64(nb)/1e6, n),
		"PS: each of p workers sends its gradient to a server (one more rank: p+1 in all), which receives them in rank order summing as it goes, then sends the sum to each worker in turn (scheme sync-ps's messages)",
		"tree: collective.Tree allreduce over the p workers (binomial reduce to rank 0, then broadcast)",
		fmt.Sprintf("time: median over %d iterations (after %d warm-up) of the max over ranks; rel = time / time at p=%d", o.PSReps, o.PSWarmup, o.PSWorkers[0]),
		"model: alpha*msgs + beta*bytes, msgs = sequential messages on the critical path and bytes = bytes sent+received by the busiest rank, both from the schedules (Verify, Cost); alpha, beta fitted from a 2-rank ping-pong (4 B and the model) on the same transport",
		fmt.Sprintf("tcp runs p up to %d (PS: p+1 processes); every rank shares this machine's %d cores, so transfers the tree runs in parallel compete for the same CPUs and memory bus", o.TCPMaxWorkers, runtime.NumCPU()))
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
			return sec, err
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
				return sec, err
			}
			pt.tree = st[commKey{taskTree, nb}].Med
			job.Task = taskPS
			if st, err = run(p+1, job); err != nil {
				return sec, err
			}
			pt.ps = st[commKey{taskPS, nb}].Med
			pts = append(pts, pt)
		}
		t := &Table{Cols: psCols(), Spans: []Span{{"", 1}, {"", 1}, {"measured", 1}, {"", 1}, {"", 1}, {"", 1}, {"", 1},
			{"alpha-beta model (PS)", 4}, {"alpha-beta model (tree)", 4}, {"all ranks' bytes", 2}}}
		base := pts[0]
		bpm, btm := psModel(base.p, n), treeModel(base.p, n)
		for _, pt := range pts {
			pm, tm := psModel(pt.p, n), treeModel(pt.p, n)
			meas := []string{"-", "-", "-", "-", "-"}
			if !math.IsNaN(pt.ps) {
				meas = []string{fmt.Sprintf("%.2f", pt.ps*1e3), fmt.Sprintf("%.2f", pt.ps/base.ps), fmt.Sprintf("%.2f", pt.tree*1e3), fmt.Sprintf("%.2f", pt.tree/base.tree), fmt.Sprintf("%.2f", pt.ps/pt.tree)}
			}
			row := append([]string{tr, fmt.Sprint(pt.p)}, meas...)
			t.Rows = append(t.Rows, append(row,
				fmt.Sprint(pm.Msgs), fmt.Sprintf("%.1f", float64(pm.MaxBytes)/1e6), fmt.Sprintf("%.2f", pm.Predict(alpha, beta)*1e3), fmt.Sprintf("%.2f", pm.Predict(alpha, beta)/bpm.Predict(alpha, beta)),
				fmt.Sprint(tm.Msgs), fmt.Sprintf("%.1f", float64(tm.MaxBytes)/1e6), fmt.Sprintf("%.2f", tm.Predict(alpha, beta)*1e3), fmt.Sprintf("%.2f", tm.Predict(alpha, beta)/btm.Predict(alpha, beta)),
				fmt.Sprintf("%.1f", float64(pm.TotalBytes)/1e6), fmt.Sprintf("%.1f", float64(tm.TotalBytes)/1e6)))
		}
		sec.Blocks = append(sec.Blocks, Block{Lines: []string{"", fmt.Sprintf("%s: alpha %.1f us, beta^-1 %.2f GB/s (one-way ping-pong: 4 B %.3f ms, %.1f MB %.3f ms)",
			tr, alpha*1e6, 1/beta/1e9, alpha*1e3, float64(nb)/1e6, pp[commKey{taskPingPong, nb}].R0Med*1e3)}, Table: t})
	}
	return sec, nil
}

// psCols are the PS-vs-tree table's columns: the transport and p, what
// was measured, then the alpha-beta model of each schedule and the bytes
// all ranks move.
func psCols() []Col {
	const bar = " | "
	return []Col{{Name: "", Width: 7, Left: true}, {Name: "p", Width: 3}, {Name: "PS_ms", Width: 9}, {Name: "rel", Width: 6}, {Name: "tree_ms", Width: 9}, {Name: "rel", Width: 6}, {Name: "PS/tree", Width: 7},
		{Name: "PS_msgs", Width: 8, Sep: bar}, {Name: "PS_MB", Width: 8}, {Name: "PS_ms", Width: 8}, {Name: "rel", Width: 6},
		{Name: "tree_msgs", Width: 9, Sep: bar}, {Name: "tree_MB", Width: 8}, {Name: "tree_ms", Width: 8}, {Name: "rel", Width: 6},
		{Name: "PS_totMB", Width: 9, Sep: bar}, {Name: "tree_totMB", Width: 9}}
}
