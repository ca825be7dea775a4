package cpuinfo

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// Kernel is one peak kernel: an instruction set, its register width and
// the number of independent accumulators its loop keeps.
type Kernel struct {
	// Name says what the kernel runs on: "AVX-512 ZMM", "AVX2 YMM", or,
	// below AVX2, which has no FMA, "AVX YMM mul+add" and "SSE XMM
	// mul+add".
	Name string
	// Op is what each accumulator takes per iteration, two FLOP per lane:
	// "FMA", or a multiply and an add ("VMULPS+VADDPS", "MULPS+ADDPS"),
	// which round twice where an FMA rounds once.
	Op string
	// Lanes is float32 values per register (16, 8 or 4); Accumulators the
	// registers, each taking one Op per iteration (24 or 12).
	Lanes, Accumulators int
	run                 func(n int, x, y float32, acc []float32)
}

// Run runs n iterations of the kernel on acc, which holds Accumulators x
// Lanes values: afterwards acc[i] is x*y added n times to its old value,
// rounded after each addition (a fused multiply-add rounds once; the
// mul+add kernels round the product too).
// It panics if acc has the wrong length.
func (k Kernel) Run(n int, x, y float32, acc []float32) {
	if len(acc) != k.Lanes*k.Accumulators {
		panic(fmt.Sprintf("cpuinfo: %s kernel wants %d accumulator values, got %d", k.Name, k.Lanes*k.Accumulators, len(acc)))
	}
	k.run(n, x, y, acc)
}

// ErrNoKernel is what BestKernel, KernelAt and MeasurePeak return where no
// assembly kernel can run: another architecture, the purego build, or a
// CPU below SSE4.1.
var ErrNoKernel = errors.New("cpuinfo: no peak kernel")

// BestKernel is the kernel of the level this process runs at, EnvISA:
// the CPU's widest (AVX-512 ZMM where it has AVX512_CORE, else AVX2 YMM,
// else the mul+add kernels of AVX and SSE4.1), capped by
// ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA) when set, so that a run under
// a cap reports the peak at that cap. ErrNoKernel, with the reason, where
// none can run.
func BestKernel() (Kernel, error) { return KernelAt(EnvISA()) }

// Peak is one measurement of the FMA peak.
type Peak struct {
	Kernel Kernel
	// Threads ran the kernel at once, each Iters iterations.
	Threads, Iters int
	// Seconds is the wall time of the fastest of Trials runs, from the
	// start signal to the last thread's end.
	Seconds float64
	Trials  int
}

// FLOPs counts the floating-point operations of one run: every Op (an
// FMA, or a multiply and an add) does Lanes multiply-adds, two
// operations each.
func (p Peak) FLOPs() float64 {
	return float64(p.Threads) * float64(p.Iters) * float64(p.Kernel.Accumulators) * float64(p.Kernel.Lanes) * 2
}

// GFLOPS is the measured peak in 10^9 float32 operations per second.
func (p Peak) GFLOPS() float64 {
	if p.Seconds <= 0 {
		return 0
	}
	return p.FLOPs() / p.Seconds / 1e9
}

// Formula shows how GFLOPS was computed, for a report: "1 thread x
// 2000000 iterations x 24 FMA x 16 lanes x 2 FLOP / 0.0512 s = 150.0
// GFLOP/s (AVX-512 ZMM, best of 50)"; the mul+add kernels show their Op
// in place of FMA.
func (p Peak) Formula() string {
	th := "threads"
	if p.Threads == 1 {
		th = "thread"
	}
	return fmt.Sprintf("%d %s x %d iterations x %d %s x %d lanes x 2 FLOP / %.4f s = %.1f GFLOP/s (%s, best of %d)",
		p.Threads, th, p.Iters, p.Kernel.Accumulators, p.Kernel.Op, p.Kernel.Lanes, p.Seconds, p.GFLOPS(), p.Kernel.Name, p.Trials)
}

// MeasurePeak times the best kernel on threads goroutines at once, each
// locked to its own OS thread, for runs of about runFor each, and returns
// the fastest of trials runs. Spread over distinct cores by the
// scheduler, the threads measure the peak of that many cores together
// (lower than threads times the one-core peak where the clock drops with
// more cores busy). Other load on the machine lowers it too: the best of
// several trials is the estimate. threads must be at most GOMAXPROCS.
func MeasurePeak(threads int, runFor time.Duration, trials int) (Peak, error) {
	k, err := BestKernel()
	if err != nil {
		return Peak{}, err
	}
	return measure(k, threads, runFor, trials)
}

// MeasurePeakAt is MeasurePeak with the kernel of level l (KernelAt)
// rather than that of the process's level.
func MeasurePeakAt(l ISA, threads int, runFor time.Duration, trials int) (Peak, error) {
	k, err := KernelAt(l)
	if err != nil {
		return Peak{}, err
	}
	return measure(k, threads, runFor, trials)
}

func measure(k Kernel, threads int, runFor time.Duration, trials int) (Peak, error) {
	switch {
	case threads < 1 || trials < 1 || runFor <= 0:
		return Peak{}, fmt.Errorf("cpuinfo: peak on %d threads, %d trials of %v: want positive values", threads, trials, runFor)
	case threads > runtime.GOMAXPROCS(0):
		return Peak{}, fmt.Errorf("cpuinfo: peak on %d threads, but GOMAXPROCS is %d", threads, runtime.GOMAXPROCS(0))
	}
	// Calibrate: grow the iteration count until one run takes a tenth of
	// runFor, then scale. The first runs also bring the core to its
	// vector clock.
	acc := make([]float32, k.Lanes*k.Accumulators)
	n := 1 << 12
	for {
		t0 := time.Now()
		k.run(n, 0, 0, acc)
		d := time.Since(t0)
		if d >= runFor/10 || n >= 1<<40 {
			n = max(1, int(float64(n)*float64(runFor)/float64(max(d, time.Nanosecond))))
			break
		}
		n *= 4
	}
	p := Peak{Kernel: k, Threads: threads, Iters: n, Trials: trials}
	for range trials {
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		for range threads {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				acc := make([]float32, k.Lanes*k.Accumulators)
				k.run(1<<10, 0, 0, acc) // touch the registers before the start
				ready.Done()
				<-start
				// x*y = 0 keeps the accumulators at 0: no overflow, no
				// subnormals, whatever n is.
				k.run(n, 0, 0, acc)
			}()
		}
		ready.Wait()
		t0 := time.Now()
		close(start)
		done.Wait()
		if s := time.Since(t0).Seconds(); p.Seconds == 0 || s < p.Seconds {
			p.Seconds = s
		}
	}
	return p, nil
}
