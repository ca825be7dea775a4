package calib

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"dsgd/engine/model"
	"dsgd/simulator/sim"
)

// Concurrent measures len(nets) copies of one model running at once, one
// per worker of a synchronous run on this machine, and returns the
// simulator's model: the per-layer means over every copy and pass (as
// Model gives for one copy), the mean update time and add rate with
// every copy measuring at once, and the compute jitter (Jitter) of the
// per-pass forward-backward times.
//
// The copies run in lockstep, as the workers of a synchronous scheme do:
// every pass of every copy starts when the previous pass of all of them
// has finished, so pass i of each copy runs under the same load and
// their differences are each copy's own variation, the waiting that a
// synchronous exchange adds to the mean. Each copy runs on its own
// goroutine; nets must be distinct nets of the same model with their
// inputs filled (opt as for Model). With one net the jitter is 0: it
// takes two copies to tell a worker's own variation from the machine's.
func Concurrent(ctx context.Context, nets []*model.Net, opt ModelOptions) (sim.Model, error) {
	if len(nets) == 0 {
		return sim.Model{}, fmt.Errorf("calib: concurrent measurement of no nets")
	}
	if opt.Warmup == 0 {
		opt.Warmup = 2
	}
	if opt.Iters == 0 {
		opt.Iters = 10
	}
	if opt.Iters < 0 || opt.Warmup < 0 {
		return sim.Model{}, fmt.Errorf("calib: time %d iterations after %d warm-up: want iters > 0, warmup >= 0", opt.Iters, opt.Warmup)
	}
	k := len(nets)
	nl := len(nets[0].Layers())
	for i, n := range nets {
		if len(n.Layers()) != nl || n.Name() != nets[0].Name() {
			return sim.Model{}, fmt.Errorf("calib: concurrent copies differ: net %d is %q with %d layers, net 0 %q with %d", i, n.Name(), len(n.Layers()), nets[0].Name(), nl)
		}
	}
	times := make([][]time.Duration, k)
	start := make([]chan bool, k) // true: a timed pass; closed: stop
	done := make(chan struct{}, k)
	var wg sync.WaitGroup
	for c, net := range nets {
		start[c] = make(chan bool)
		times[c] = make([]time.Duration, 0, opt.Iters)
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for timed := range start[c] {
				if timed && first {
					net.ResetTimes()
					first = false
				}
				t0 := time.Now()
				net.ForwardBackward()
				if timed {
					times[c] = append(times[c], time.Since(t0))
				}
				done <- struct{}{}
			}
		}()
	}
	stop := func() {
		for _, ch := range start {
			close(ch)
		}
		wg.Wait()
	}
	for i := 0; i < opt.Warmup+opt.Iters; i++ {
		if err := ctx.Err(); err != nil {
			stop()
			return sim.Model{}, err
		}
		for _, ch := range start {
			ch <- i >= opt.Warmup
		}
		for range nets {
			<-done
		}
	}
	stop()
	for c, net := range nets {
		if err := net.Err(); err != nil {
			return sim.Model{}, fmt.Errorf("calib: copy %d: %w", c, err)
		}
	}

	owned := map[string]int{}
	for _, b := range nets[0].Blocks() {
		owned[b.Layer] += b.Len()
	}
	m := sim.Model{Name: nets[0].Name(), Layers: make([]sim.Layer, nl)}
	passes := time.Duration(k * opt.Iters)
	for c, net := range nets {
		for i, li := range net.Layers() {
			l := &m.Layers[i]
			if c == 0 {
				l.Name, l.Params = li.Name, owned[li.Name]
			}
			l.Forward += li.Forward
			l.Backward += li.Backward
		}
	}
	for i := range m.Layers {
		m.Layers[i].Forward /= passes
		m.Layers[i].Backward /= passes
	}
	m.Jitter = Jitter(times)

	// The update and the add rate, every copy measuring at once.
	updates := make([]time.Duration, k)
	rates := make([]float64, k)
	errs := make([]error, k)
	for c, net := range nets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if opt.Solver != nil {
				updates[c], errs[c] = timeUpdate(ctx, net, *opt.Solver, max(opt.Threads, 1), opt.Warmup, opt.Iters)
			}
			if opt.AddLen >= 0 {
				n := opt.AddLen
				if n == 0 {
					n = DefaultAddLen
				}
				rates[c] = AddRate(n, 50*time.Millisecond)
			}
		}()
	}
	wg.Wait()
	for c := range nets {
		if errs[c] != nil {
			return sim.Model{}, errs[c]
		}
		m.Update += updates[c] / time.Duration(k)
		m.AddRate += rates[c] / float64(k)
	}
	return m, nil
}

// Jitter estimates the standard deviation σ of one worker's time per
// pass from passes run in lockstep: times[c][i] is copy c's pass i, all
// copies holding the same number of passes. It is √π/2 times the mean
// absolute difference between two copies' times of the same pass (over
// every pass and pair of copies), which for independent normal times is
// σ, and which, whatever the distribution, makes two simulated normal
// workers wait on average what the measured ones did: E[max(a,b)] −
// E[(a+b)/2] = E|a−b|/2. The difference cancels what slows every copy
// at once (another job, a frequency change), which a synchronous
// exchange does not wait for. Fewer than two copies, or no passes, give
// 0.
func Jitter(times [][]time.Duration) time.Duration {
	if len(times) < 2 || len(times[0]) == 0 {
		return 0
	}
	n := len(times[0])
	for c, ts := range times {
		if len(ts) != n {
			panic(fmt.Sprintf("calib: Jitter: copy %d has %d passes, copy 0 %d", c, len(ts), n))
		}
	}
	sum, pairs := 0.0, 0
	for a := range times {
		for b := a + 1; b < len(times); b++ {
			for i := range n {
				sum += math.Abs(float64(times[a][i] - times[b][i]))
			}
			pairs += n
		}
	}
	return time.Duration(math.Sqrt(math.Pi) / 2 * sum / float64(pairs))
}
