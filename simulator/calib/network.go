package calib

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"dsgd/comm/transport"
	"dsgd/comm/transport/tcp"
	"dsgd/simulator/sim"
)

// NetworkOptions tunes Network and PingPong.
type NetworkOptions struct {
	// Sizes are the message sizes in bytes, each a multiple of 4 (one
	// float32) and positive; default DefaultSizes.
	Sizes []int
	// Reps is the timed round trips per size (default 10); the median is
	// kept. Warmup is the untimed ones before them (default 2).
	Reps, Warmup int
	// Timeout bounds the whole measurement, the TCP set-up included
	// (default 1 minute).
	Timeout time.Duration
}

// DefaultSizes are the ping-pong message sizes: one float, then every
// power of 4 bytes up to 16 MiB.
var DefaultSizes = []int{4, 16, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}

// Sample is one ping-pong measurement: the median one-way time (half the
// round trip) of a message of Bytes bytes.
type Sample struct {
	Bytes   int
	Seconds float64
}

// Network measures the transport kind ("inproc": goroutines in this
// process; "tcp": two ranks on loopback in this process) with PingPong and
// fits t = α + β·bytes to the samples: by least squares (Fit), with α
// taken from the smallest message when the fit's intercept is negative or
// above that message's time (see fitNetwork). The network is named
// "measured KIND".
func Network(ctx context.Context, kind string, opt NetworkOptions) (sim.Network, error) {
	samples, err := PingPong(ctx, kind, opt)
	if err != nil {
		return sim.Network{}, err
	}
	alpha, beta, err := fitNetwork(samples)
	if err != nil {
		return sim.Network{}, fmt.Errorf("calib: %s ping-pong: %w", kind, err)
	}
	if beta <= 0 {
		return sim.Network{}, fmt.Errorf("calib: %s ping-pong: times do not grow with message size (fitted beta %g s/B)", kind, beta)
	}
	return sim.Network{Name: "measured " + kind, Alpha: alpha, Beta: beta}, nil
}

// PingPong times messages between two ranks of a fresh group of the
// transport kind ("inproc" or "tcp"): rank 0 sends each size, rank 1 sends
// it back, and the one-way time is half the round trip. It returns one
// Sample per size, in the order of opt.Sizes.
func PingPong(ctx context.Context, kind string, opt NetworkOptions) ([]Sample, error) {
	if opt.Sizes == nil {
		opt.Sizes = DefaultSizes
	}
	for _, s := range opt.Sizes {
		if s <= 0 || s%4 != 0 {
			return nil, fmt.Errorf("calib: ping-pong size %d bytes: want a positive multiple of 4", s)
		}
	}
	if opt.Reps <= 0 {
		opt.Reps = 10
	}
	if opt.Warmup <= 0 {
		opt.Warmup = 2
	}
	if opt.Timeout <= 0 {
		opt.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	eps, err := pair(ctx, kind, opt.Timeout)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, ep := range eps {
			ep.Close()
		}
	}()
	const tag = 0x43414c42 // "CALB"
	maxN := slices.Max(opt.Sizes) / 4
	var (
		wg      sync.WaitGroup
		echoErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]float32, maxN)
		for _, s := range opt.Sizes {
			b := buf[:s/4]
			for i := 0; i < opt.Warmup+opt.Reps; i++ {
				if err := eps[1].Recv(ctx, 0, tag, b); err != nil {
					echoErr = err
					cancel()
					return
				}
				if err := eps[1].Send(ctx, 0, tag, b); err != nil {
					echoErr = err
					cancel()
					return
				}
			}
		}
	}()
	samples, err := pingRank0(ctx, eps[0], tag, opt, maxN)
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err != nil {
		if echoErr != nil {
			err = echoErr
		}
		return nil, fmt.Errorf("calib: %s ping-pong: %w", kind, err)
	}
	return samples, nil
}

// pingRank0 is rank 0's side of PingPong.
func pingRank0(ctx context.Context, ep transport.Endpoint, tag uint32, opt NetworkOptions, maxN int) ([]Sample, error) {
	buf := make([]float32, maxN)
	for i := range buf {
		buf[i] = float32(i % 251)
	}
	times := make([]float64, opt.Reps)
	samples := make([]Sample, 0, len(opt.Sizes))
	for _, s := range opt.Sizes {
		b := buf[:s/4]
		for i := 0; i < opt.Warmup+opt.Reps; i++ {
			t0 := time.Now()
			if err := ep.Send(ctx, 1, tag, b); err != nil {
				return nil, err
			}
			if err := ep.Recv(ctx, 1, tag, b); err != nil {
				return nil, err
			}
			if i >= opt.Warmup {
				times[i-opt.Warmup] = time.Since(t0).Seconds() / 2
			}
		}
		slices.Sort(times)
		samples = append(samples, Sample{Bytes: s, Seconds: times[len(times)/2]})
	}
	return samples, nil
}

// pair makes a group of two endpoints of the transport kind.
func pair(ctx context.Context, kind string, timeout time.Duration) ([]transport.Endpoint, error) {
	switch kind {
	case "inproc":
		return transport.NewInproc(2), nil
	case "tcp":
	default:
		return nil, fmt.Errorf("calib: transport %q: choose inproc or tcp", kind)
	}
	// The rendezvous listener, opened here and handed to rank 0 (a port
	// released and bound again could be taken in between).
	rdv, err := tcp.Reserve("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("calib: tcp: listening for the rendezvous: %w", err)
	}
	defer rdv.Close()
	eps := make([]transport.Endpoint, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			eps[r], errs[r] = tcp.Connect(ctx, tcp.Config{Rank: r, Size: 2, Rendezvous: rdv.Addr(), Stream: rdv, Token: "calib", Timeout: timeout, Shm: tcp.ShmOff})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			for _, ep := range eps {
				if ep != nil {
					ep.Close()
				}
			}
			return nil, fmt.Errorf("calib: tcp rank %d: %w", r, err)
		}
	}
	return eps, nil
}

// errNoSizes is Fit's error for fewer than two distinct sizes.
var errNoSizes = errors.New("calib: fit needs times at two or more distinct message sizes")

// Fit fits t = α + β·x to the points (xs[i], ts[i]) by ordinary least
// squares. Points that lie exactly on a line give back its α and β. It
// needs two or more distinct x values and positive, finite times.
func Fit(xs, ts []float64) (alpha, beta float64, err error) {
	if len(xs) != len(ts) {
		return 0, 0, fmt.Errorf("calib: fit: %d sizes but %d times", len(xs), len(ts))
	}
	distinct := map[float64]bool{}
	for i, x := range xs {
		t := ts[i]
		if math.IsNaN(x) || math.IsInf(x, 0) || !(t > 0) || math.IsInf(t, 0) {
			return 0, 0, fmt.Errorf("calib: fit: point %d (%g bytes, %g s) is not a finite size with a positive finite time", i, x, t)
		}
		distinct[x] = true
	}
	if len(distinct) < 2 {
		return 0, 0, errNoSizes
	}
	// Centred sums, for the conditioning of the solve: sizes reach 2^24.
	n := float64(len(xs))
	var xm, tm float64
	for i, x := range xs {
		xm += x / n
		tm += ts[i] / n
	}
	var sxx, sxt float64
	for i, x := range xs {
		d := x - xm
		sxx += d * d
		sxt += d * (ts[i] - tm)
	}
	beta = sxt / sxx
	return tm - beta*xm, beta, nil
}

// fitNetwork turns ping-pong samples into α and β: the least-squares fit
// of all of them (Fit), unless its intercept falls outside [0, t₀], where
// t₀ is the time of the smallest message. That happens when the noise of
// the largest messages (milliseconds) swamps the latency (microseconds);
// then α is taken from the smallest message, t₀ − β·x₀, and β refitted by
// least squares with that intercept fixed.
func fitNetwork(samples []Sample) (alpha, beta float64, err error) {
	xs, ts := make([]float64, len(samples)), make([]float64, len(samples))
	for i, s := range samples {
		xs[i], ts[i] = float64(s.Bytes), s.Seconds
	}
	alpha, beta, err = Fit(xs, ts)
	if err != nil {
		return 0, 0, err
	}
	i0 := 0
	for i, x := range xs {
		if x < xs[i0] {
			i0 = i
		}
	}
	if alpha >= 0 && alpha <= ts[i0] {
		return alpha, beta, nil
	}
	for range 2 { // α depends on β through the smallest message's β·x₀
		alpha = max(ts[i0]-max(beta, 0)*xs[i0], 0)
		var sxt, sxx float64
		for i, x := range xs {
			sxt += x * (ts[i] - alpha)
			sxx += x * x
		}
		beta = sxt / sxx
	}
	return alpha, beta, nil
}
