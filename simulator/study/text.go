package study

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"dsgd/simulator/sim"
)

// Text is a Reporter that writes a study's progress to W as lines of
// text, as dsgd simulate prints them: the measurements as they start and
// end, then a table with a row per run (Sweep) or per scheme compared
// (Validate). C is the Config the study runs. Its other methods write
// the lines that come before and after a study (Swept, Validating,
// Training, Trained, Verdict). The text is the command's: where it says
// how to change a setting, it names dsgd simulate's flags.
type Text struct {
	W io.Writer
	C Config
}

var _ Reporter = (*Text)(nil)

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// AddRate writes the add rate measured.
func (p *Text) AddRate(rate float64) {
	fmt.Fprintf(p.W, "dsgd simulate: measured the add rate here: %.2f G float32 adds/s\n", rate/1e9)
}

// MeasuringModel writes that the model is being measured, and why.
func (p *Text) MeasuringModel() {
	why := "--calibrate"
	if !p.C.Calibrate {
		why = "compute times must come from somewhere; --params N --compute-ms T gives them instead"
	}
	fmt.Fprintf(p.W, "dsgd simulate: measuring the model with the real engine, %d thread(s) per layer (%s)...\n", p.C.Threads, why)
}

// MeasuringNetwork writes that the tcp transport is being measured.
func (p *Text) MeasuringNetwork() {
	fmt.Fprintf(p.W, "dsgd simulate: measuring the tcp transport on loopback (ping-pong, 4 B to 16 MiB)...\n")
}

// Start writes the model and network simulated and the run's length.
func (p *Text) Start(model sim.Model, nw sim.Network) {
	fmt.Fprintf(p.W, "dsgd simulate: model %s, %d parameters (%.1f MB of float32), compute %.3f ms + update %.3f ms per iteration\n",
		model.Name, model.Params(), float64(4*model.Params())/1e6, ms(model.Compute()), ms(model.Update))
	fmt.Fprintf(p.W, "dsgd simulate: network %s; %d iterations after %d warm-up, seed %d\n", nw, p.C.Iters, p.C.Warmup, p.C.Seed)
}

// Baseline writes T1, what the columns mean, and the table's header.
func (p *Text) Baseline(t1 time.Duration) {
	fmt.Fprintf(p.W, "T1 = %.3f ms, one worker's iteration under seq (no communication). Weak scaling: every worker trains its own batch, so\n", ms(t1))
	fmt.Fprintf(p.W, "  speedup = P*T1/T(P) (throughput over one worker's); efficiency = T1/T(P) = speedup/P.\n")
	fmt.Fprintf(p.W, "Times are worker 0's means per iteration; comm is exposed communication, wait is waiting for other workers, comm %% = (comm + wait) / iteration.\n\n")
	fmt.Fprintf(p.W, "%-16s %6s %10s %10s %10s %10s %7s %9s %10s\n", "scheme", "P", "iter ms", "compute ms", "comm ms", "wait ms", "comm %", "speedup", "efficiency")
}

// Run writes one run's row.
func (p *Text) Run(r Run) {
	res := r.Result
	fmt.Fprintf(p.W, "%-16s %6d %10.3f %10.3f %10.3f %10.3f %6.1f%% %9.2f %10.3f\n",
		r.Scheme, r.Workers, ms(res.Iter), ms(res.Compute), ms(res.Comm), ms(res.Wait), 100*res.CommRatio, r.Speedup, r.Efficiency)
}

// Swept writes the notes after a sweep: where the straggler is, where
// the timeline went.
func (p *Text) Swept() {
	if st := p.C.Straggle; st != nil && st.Prob == 0 {
		fmt.Fprintf(p.W, "(the straggler, rank %d, is in the runs with more than %d workers)\n", st.Rank, st.Rank)
	}
	if p.C.Timeline != "" {
		fmt.Fprintf(p.W, "timeline: %s\n", p.C.Timeline)
	}
}

// Validating writes what Validate's real runs are.
func (p *Text) Validating() {
	fmt.Fprintf(p.W, "dsgd simulate --validate: %d workers over inproc, %d thread(s) each, %d iterations per scheme, %d run(s) each (interleaved; the median is compared), float32 sums (--reduce fast)\n", p.C.Workers[0], p.C.Threads, p.C.Iters, p.C.Repeat)
}

// Training writes that a real run of the scheme starts (the run-th, from
// 0); Trained ends its line.
func (p *Text) Training(scheme string, run int) {
	fmt.Fprintf(p.W, "  training %-10s (run %d) ", scheme, run+1)
}

// Trained ends Training's line with the run's time per iteration, or
// with nothing when the run failed (m nil).
func (p *Text) Trained(m *Measured) {
	if m == nil {
		fmt.Fprintln(p.W)
		return
	}
	fmt.Fprintf(p.W, "%.3f ms per iteration\n", ms(m.Iter))
}

// MeasuringLockstep writes that the model and the inproc transport are
// being measured.
func (p *Text) MeasuringLockstep(passes int) {
	fmt.Fprintf(p.W, "  measuring the model (%d copies at once and in lockstep, as synchronous workers run, %d thread(s) each, %d passes) and the inproc transport...\n", p.C.Workers[0], p.C.Threads, passes)
}

// Calibrated writes the model and network measured.
func (p *Text) Calibrated(model sim.Model, nw sim.Network) {
	fmt.Fprintf(p.W, "  model %s: compute %.3f ms, jitter %.3f ms (one worker's standard deviation per iteration, from the two copies' differences), update %.3f ms, %.2f G adds/s; network %s\n",
		model.Name, ms(model.Compute()), ms(model.Jitter), ms(model.Update), model.AddRate/1e9, nw)
}

// SharedCores writes the shared processors the workers are simulated on.
func (p *Text) SharedCores(cores float64, alone sim.Model) {
	fmt.Fprintf(p.W, "  %d workers of %d thread(s) share %d cores: simulated on %.3g shared processors (processor sharing), from %.3f ms per worker computing alone\n",
		p.C.Workers[0], p.C.Threads, runtime.NumCPU(), cores, ms(alone.Compute()))
}

// Simulating writes the simulation's length and the comparison's header.
func (p *Text) Simulating(iters int) {
	fmt.Fprintf(p.W, "  simulating %d iterations per scheme, seed 1\n\n", iters)
	fmt.Fprintf(p.W, "%-16s %12s %12s %8s %16s %16s\n", "scheme", "measured ms", "predicted ms", "error", "compute ms m/p", "comm+wait ms m/p")
}

// Compared writes one scheme's row: measured against predicted.
func (p *Text) Compared(r Comparison) {
	m, q := r.Measured, r.Predicted
	fmt.Fprintf(p.W, "%-16s %12.3f %12.3f %7.1f%% %7.3f/%-8.3f %7.3f/%-8.3f\n", r.Scheme, ms(m.Iter), ms(q.Iter), r.Error, ms(m.Compute), ms(q.Compute), ms(m.Comm), ms(q.Comm))
}

// Verdict writes the worst error and whether it is within the 25% the
// simulator aims for.
func (p *Text) Verdict(v *Validation) {
	verdict := "within"
	if v.Worst > 25 {
		verdict = "NOT within"
	}
	fmt.Fprintf(p.W, "\nworst error %.1f%%: %s the 25%% the simulator aims for (measured: rank 0's phases per iteration, data loading included, in the run of median time; m/p: measured/predicted; the real workers share this machine's cores, and so may other jobs: repeat before trusting one run)\n", v.Worst, verdict)
}
