package node

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"dsgd/comm/transport"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// The scheme scenarios: text scripts under testdata/scenarios, each a
// `run` of real ranks (scheme.New, node.Rank) against a real center over
// fixed gradients, printing what the scheme's ordering claim is about.
// The output depends only on the scheme's semantics, never on the
// timing; `go test ./node -run Scenarios -rewrite` regenerates it.
//
//	run scheme=NAME workers=W iters=N [staleness=S] [interval=H] [alpha=A]
//	    [slow=R] [deadline=MS]
//
// slow=R makes worker R a straggler: under weedout its computes never
// end before they are aborted; under the others its first compute ends
// only once every other worker waits for it in the center (in Pull for
// easgd-rr's turn, in Clock for ssp). No wait is on the wall clock:
// weedout's rounds close at their deadline=MS as soon as the fast
// workers are in and the straggler computes for the round (deadlines),
// and easgd-rr's computes each wait for the others to compute too or
// wait their turn, so that two computes meet whenever the center lets
// them. Every worker's k-th compute uses grad(r, k) and the update is
// plain SGD with rate lr.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "run" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return runScenario(t, d)
		})
	})
}

// seen is one compute: who, which of its computes, on what weights, and
// the order it started in among all workers.
type seen struct {
	worker, k, order int
	weights          []float32
}

// scenarioComputer records every compute and can be slow, or wait for a
// token (hogwild's scenario runs the workers one at a time). Slowness is
// an event, not a time: a compute waits until the other workers have
// gone as far as they can without it (the watch).
type scenarioComputer struct {
	fixedComputer
	params []float32
	log    *scenarioLog
	token  chan struct{} // nil: no turn-taking
	watch  *watch
	park   []scheme.Op // the center calls in which a worker waits for the others
	meet   bool        // every compute waits for the others to compute too or park
	slow   bool        // the first compute waits for the others to park
	stuck  *deadlines  // non-nil: every compute runs until aborted (weedout's straggler)
}

type scenarioLog struct {
	mu      sync.Mutex
	seen    []seen
	running int
	most    int
	aborted int
}

func (c *scenarioComputer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	if c.token != nil {
		select {
		case <-c.token:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	l := c.log
	l.mu.Lock()
	l.seen = append(l.seen, seen{worker: c.rank, k: c.calls, order: len(l.seen), weights: append([]float32(nil), c.params...)})
	l.running++
	l.most = max(l.most, l.running)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.running--
		l.mu.Unlock()
	}()
	if c.watch != nil {
		c.watch.computing(c.rank, true)
		defer c.watch.computing(c.rank, false)
	}
	var err error
	switch {
	case c.stuck != nil:
		c.stuck.straggling()
		<-ctx.Done()
		l.mu.Lock()
		l.aborted++
		l.mu.Unlock()
		c.calls++
		return 0, ctx.Err()
	case c.slow && c.calls == 0:
		err = c.watch.waitOthers(ctx, c.rank, false, c.park...)
	case c.meet:
		// Long enough for two computes to meet, if they can.
		err = c.watch.waitOthers(ctx, c.rank, true, c.park...)
	}
	if err != nil {
		return 0, err
	}
	return c.fixedComputer.Compute(ctx, ready)
}

func runScenario(t *testing.T, d *datadriven.TestData) string {
	var name string
	workers, iters, staleness, interval, slow, deadline := 2, 3, 0, 1, -1, 0
	alpha := 0.0
	d.ScanArgs(t, "scheme", &name)
	d.MaybeScanArgs(t, "workers", &workers)
	d.MaybeScanArgs(t, "iters", &iters)
	d.MaybeScanArgs(t, "staleness", &staleness)
	d.MaybeScanArgs(t, "interval", &interval)
	d.MaybeScanArgs(t, "alpha", &alpha)
	d.MaybeScanArgs(t, "slow", &slow)
	d.MaybeScanArgs(t, "deadline", &deadline)
	sc := scheme.Config{Name: name, Workers: workers, MaxIter: iters, Staleness: staleness, Interval: interval, Alpha: float32(alpha),
		Layout: scheme.Layout{N: dim, Blocks: []scheme.Range{{Lo: 0, Hi: dim}}}, Pack: true}
	schemes, err := scheme.New(sc)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	var cen *center.Local
	var wc *watch
	var dl *deadlines
	if uses, n := sc.UsesCenter(); uses {
		cc := center.Config{Workers: n, Weights: w0, Interval: interval, ClockedReads: name == "ssp" && staleness == 0,
			Deadline: time.Duration(deadline) * time.Millisecond,
			Update: func(w, g []float32, _ int) {
				for i := range w {
					w[i] -= lr * g[i]
				}
			}}
		if name == "weedout" {
			dl = newDeadlines(workers - 1)
			dl.hooks(&cc)
		}
		switch sc.Info().Policy {
		case scheme.RoundRobin:
			cc.Policy = center.RoundRobin
		case scheme.Hogwild:
			cc.Policy = center.Hogwild
		}
		if cen, err = center.NewLocal(cc); err != nil {
			d.Fatalf(t, "%v", err)
		}
		wc = newWatch(cen, n)
	}
	park := map[string][]scheme.Op{"easgd-rr": {scheme.Pull}, "ssp": {scheme.Clock}}[name]
	log := &scenarioLog{}
	eps := transport.NewInproc(len(schemes))
	defer func() {
		for _, ep := range eps {
			ep.Close()
		}
	}()
	shared := append([]float32(nil), w0...) // hogwild's one set of weights
	var tokens []chan struct{}
	if name == "hogwild" {
		for range workers {
			tokens = append(tokens, make(chan struct{}, 1))
		}
		tokens[0] <- struct{}{}
	}
	ranks := make([]*Rank, len(schemes))
	for r := range ranks {
		params, grads := append([]float32(nil), w0...), make([]float32, dim)
		if name == "hogwild" {
			params = shared
		}
		c := &scenarioComputer{fixedComputer: fixedComputer{grads: grads, rank: r}, params: params, log: log,
			watch: wc, park: park, meet: name == "easgd-rr"}
		if r == slow {
			c.stuck, c.slow = dl, dl == nil
		}
		var cc center.Center
		if cen != nil {
			cc = wc
		}
		rk := &Rank{Scheme: schemes[r], Ep: eps[r], Params: params, Grads: grads, Center: cc, CenterID: r, Computer: c, Timeout: 10 * time.Second,
			Update: func(int) {
				for i := range params {
					params[i] -= lr * grads[i]
				}
			}}
		if tokens != nil {
			c.token = tokens[r]
			next := tokens[(r+1)%workers]
			rk.OnIter = func(int, float64) error { next <- struct{}{}; return nil }
		}
		ranks[r] = rk
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for r, err := range RunAll(ctx, ranks) {
		if err != nil {
			d.Fatalf(t, "rank %d: %v", r, err)
		}
	}
	var b strings.Builder
	switch name {
	case "ssp":
		bspReport(&b, log.seen, workers, iters)
	case "easgd-rr":
		fmt.Fprintf(&b, "workers computing at once, at most: %d\n", log.most)
		fmt.Fprintf(&b, "compute order: %s\n", order(log.seen))
	case "weedout":
		st := cen.Stats()
		fmt.Fprintf(&b, "rounds %d, gradients dropped %d, worker %d's computes aborted %d\n", st.Rounds, st.Dropped, slow, log.aborted)
		want := vec(w0)
		for k := 0; k < iters; k++ {
			for r := 0; r < workers; r++ {
				if r == slow {
					continue
				}
				for i, g := range grad(r, k) {
					want[i] -= lr * g / float64(workers-1)
				}
			}
		}
		fmt.Fprintf(&b, "center is the fast workers' mean steps: %v\n", far(vec(cen.Weights()), want) < tol)
		for r, rk := range ranks {
			fmt.Fprintf(&b, "worker %d ends on the center: %v\n", r, far(vec(rk.Params), vec(cen.Weights())) < tol)
		}
	case "hogwild":
		fmt.Fprintf(&b, "compute order: %s\n", order(log.seen))
		w := vec(w0)
		all := true
		for _, s := range log.seen {
			ok := far(vec(s.weights), w) < tol
			all = all && ok
			fmt.Fprintf(&b, "worker %d compute %d ran on %s (every earlier update: %v)\n", s.worker, s.k, fmtVec(s.weights), ok)
			for i, g := range grad(s.worker, s.k) {
				w[i] -= lr * g
			}
		}
		fmt.Fprintf(&b, "every worker saw every other's writes: %v\n", all)
	default:
		d.Fatalf(t, "no report for scheme %s", name)
	}
	return b.String()
}

// bspReport prints, iteration by iteration, whether every worker ran on
// BSP's weights: w0 − lr Σ_{j<k} Σ_r g(r, j).
func bspReport(b *strings.Builder, log []seen, workers, iters int) {
	bsp := vec(w0)
	for k := 0; k < iters; k++ {
		var at []seen
		for _, s := range log {
			if s.k == k {
				at = append(at, s)
			}
		}
		sort.Slice(at, func(i, j int) bool { return at[i].worker < at[j].worker })
		same := len(at) == workers
		for _, s := range at {
			same = same && far(vec(s.weights), bsp) < tol
		}
		fmt.Fprintf(b, "iteration %d: every worker on BSP's weights %s: %v\n", k, fmtVec32(bsp), same)
		for r := 0; r < workers; r++ {
			for i, g := range grad(r, k) {
				bsp[i] -= lr * g
			}
		}
	}
}

func order(log []seen) string {
	s := append([]seen(nil), log...)
	sort.Slice(s, func(i, j int) bool { return s[i].order < s[j].order })
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprintf("w%d.%d", x.worker, x.k)
	}
	return strings.Join(parts, " ")
}

func fmtVec(w []float32) string { return fmtVec32(vec(w)) }

func fmtVec32(w []float64) string {
	parts := make([]string, len(w))
	for i, v := range w {
		parts[i] = fmt.Sprintf("%.4f", v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
