package harness

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/datadriven"

	"dsgd/comm/collective"
	"dsgd/comm/transport"
	"dsgd/comm/transport/scripted"
	"dsgd/engine/tensor"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/node"
)

// lr is the SGD step. With it, the starting weights (multiples of 1/4)
// and the integer gradients, every sum a reduction forms is exact in any
// order, so the schemes' weights can equal seq's bit for bit.
const lr = 0.5

// timeout is each rank's wait for a peer (node.Rank.Timeout). The
// synctest bubble's clock never moves while a script runs: only the
// script's `timeout` ends a wait, and the error reads as this deadline.
const timeout = time.Minute

// Harness runs scripts' commands against one group of ranks at a time.
// It must be made and used inside a synctest bubble (synctest.Test).
type Harness struct {
	// References are the references the compare command checks a group
	// against, by name: weights a test computes by hand.
	References map[string]Reference

	g *group
}

// Close stops the group of ranks, if any, and waits for its goroutines.
func (h *Harness) Close() {
	if h.g != nil {
		h.g.stop()
		h.g = nil
	}
}

// Cmd runs one datadriven command (see the package doc) and returns its
// output ("ok" when it has nothing to say).
func (h *Harness) Cmd(t *testing.T, d *datadriven.TestData) string {
	if out := h.cmd(t, d); out != "" {
		return out
	}
	return "ok\n"
}

func (h *Harness) cmd(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd == "ranks" {
		h.Close()
		g, err := start(t, d)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		h.g = g
		return g.settle(nil)
	}
	g := h.g
	if g == nil {
		d.Fatalf(t, "%s before ranks", d.Cmd)
	}
	link := func() (from, to int) {
		d.ScanArgs(t, "from", &from)
		d.ScanArgs(t, "to", &to)
		return from, to
	}
	rank := func() int {
		var r int
		d.ScanArgs(t, "rank", &r)
		if r < 0 || r >= len(g.ranks) {
			d.Fatalf(t, "no rank %d", r)
		}
		return r
	}
	var b strings.Builder
	switch d.Cmd {
	case "deliver":
		from, to := link()
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		msgs, err := g.nw.Deliver(from, to, n)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return g.settle(msgs)
	case "deliver-all":
		return g.settle(g.nw.DeliverAll())
	case "stabilize":
		for {
			msgs := g.nw.DeliverAll()
			if len(msgs) == 0 {
				break
			}
			b.WriteString(g.settle(msgs))
		}
		if b.Len() == 0 {
			return "nothing to deliver\n"
		}
		return b.String()
	case "drop":
		from, to := link()
		m, err := g.nw.Drop(from, to)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return "dropped " + msgName(m) + "\n" + g.settle(nil)
	case "delay":
		from, to := link()
		if err := g.nw.Hold(from, to, true); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return ""
	case "release":
		if d.HasArg("rank") {
			r, n := rank(), 0
			d.MaybeScanArgs(t, "n", &n)
			if err := g.release(r, n); err != nil {
				return "error: " + err.Error() + "\n"
			}
			return g.settle(nil)
		}
		from, to := link()
		if err := g.nw.Hold(from, to, false); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return ""
	case "straggle":
		if err := g.straggle(rank()); err != nil {
			return "error: " + err.Error() + "\n"
		}
		return ""
	case "crash":
		g.crash(rank())
		return g.settle(nil)
	case "tick":
		var dur time.Duration
		d.ScanArgs(t, "d", &dur)
		if dur <= 0 {
			d.Fatalf(t, "tick d=%v: the clock only moves on", dur)
		}
		// Virtual: the bubble's clock jumps to each timer due meanwhile
		// (a center's round deadline, say) once every goroutine in it
		// is durably blocked, this one included.
		time.Sleep(dur)
		return fmt.Sprintf("clock +%v\n", time.Since(g.start)) + g.settle(nil)
	case "timeout":
		r := rank()
		if g.nw.Expire(r) == 0 {
			return fmt.Sprintf("rank %d waits for no message\n", r)
		}
		return g.settle(nil)
	case "status":
		return g.status()
	case "results":
		return g.results()
	case "compare":
		var name string
		d.ScanArgs(t, "ref", &name)
		ref := h.References[name]
		if ref == nil {
			d.Fatalf(t, "compare ref=%s: no such reference", name)
		}
		return g.compare(name, ref)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// group is one run of a scheme's ranks.
type group struct {
	sc     scheme.Config
	nw     *scripted.Net
	ranks  []*rank
	seq    []float32     // seq's weights after the same iterations
	center *center.Local // the center of a scheme whose workers use one, or nil
	start  time.Time     // when the ranks started, on the bubble's clock
	cancel context.CancelFunc
	// computes, when set, notes every compute as it runs: "order" alone,
	// "bsp" with the weights it runs on against bsp, "shared" against
	// applied.
	computes string
	// bsp[k] are the weights after k bulk-synchronous iterations that
	// each step by every worker's gradients, summed: w0 − lr·Σ_{j<k}
	// Σ_r grad(r, j), which a compute of iteration k under SSP with
	// staleness 0 runs on.
	bsp [][]float32

	mu     sync.Mutex     // guards the ranks' outcome and events, the computers' straggling, gated, applied and held
	gated  []*entry       // the center calls waiting at their gates
	inside map[int]string // the op of each rank's call the center is serving
	// applied are the start weights stepped by every worker's update so
	// far (each rank's Update, in the order they ran): what a compute
	// on weights the workers share in memory (hogwild) runs on.
	applied []float32
	held    int // the most computes held at once when the ranks were quiescent
}

// rank is one rank of the group.
type rank struct {
	id     int
	node   *node.Rank
	comp   *computer // nil for a server
	cancel context.CancelFunc
	// Guarded by group.mu:
	events []string // what the rank did since the last output
	// aborted are its computes aborted since the last output, noted
	// apart from events: a compute ends on its own goroutine, in no
	// fixed order with what its rank does meanwhile.
	aborted []string
	done    bool
	crashed bool
	err     error
	weights []float32 // at the finish
}

// unfinished is how rk ended when it did not finish its iterations
// (crashed, still running, or failed with the rank it blames), or "" when
// it finished. Call it with the group's lock held.
func (rk *rank) unfinished() string {
	switch {
	case rk.crashed:
		return "crashed"
	case !rk.done:
		return "running"
	case rk.err != nil:
		return "failed, blaming " + blame(rk.err)
	}
	return ""
}

// computer is a worker's model: its k-th compute writes grad(rank, k).
// A straggling computer does not return until released.
type computer struct {
	g      *group
	rank   int
	params []float32 // the rank's weights, which its computes run on
	grads  []float32
	blocks []scheme.Range
	// Guarded by group.mu:
	calls     int           // computes begun (aborted ones too)
	straggle  bool          // computes are held ...
	pass      int           // ... but for this many (release rank=R n=K)
	straggled bool          // straggle was ever on
	wake      chan struct{} // closed and replaced when straggle or pass change
	stalled   bool          // in a compute held by straggle
}

// grad is worker r's k-th gradient: small integers, so every sum of them
// is exact.
func grad(r, k int, g []float32) {
	for i := range g {
		g[i] = float32(((r+1)*(i+1)+3*k)%7 - 3)
	}
}

// Compute waits while the computer is held, then writes the gradient.
// A compute whose context ends first (its rank aborts it, as weed-out
// does a straggler's, or fails) is noted as aborted unless its rank
// crashed.
func (c *computer) Compute(ctx context.Context, ready func(lo, hi int)) (float64, error) {
	g := c.g
	g.mu.Lock()
	k := c.calls
	c.calls++
	for c.straggle && c.pass == 0 && ctx.Err() == nil {
		c.stalled = true
		wake := c.wake
		g.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
		}
		g.mu.Lock()
	}
	c.stalled = false
	if err := ctx.Err(); err != nil {
		if rk := g.ranks[c.rank]; !rk.crashed {
			rk.aborted = append(rk.aborted, fmt.Sprintf("compute %d aborted", k))
		}
		g.mu.Unlock()
		return 0, err
	}
	if c.straggle {
		c.pass--
	}
	if ev := g.computeEvent(k, c.params); ev != "" {
		g.ranks[c.rank].events = append(g.ranks[c.rank].events, ev)
	}
	g.mu.Unlock()
	grad(c.rank, k, c.grads)
	if ready != nil {
		for i := len(c.blocks) - 1; i >= 0; i-- { // backward: last layer first
			ready(c.blocks[i].Lo, c.blocks[i].Hi)
		}
	}
	return 1, nil
}

// computeEvent is the note of compute k, which runs on w, as
// g.computes asks for it ("" for none); g.mu is held.
func (g *group) computeEvent(k int, w []float32) string {
	ev := fmt.Sprintf("compute %d", k)
	switch g.computes {
	case "":
		return ""
	case "bsp":
		if k < len(g.bsp) && tensor.SameBits(w, g.bsp[k]) {
			return fmt.Sprintf("%s on %s (= bsp %d)", ev, hash(w), k)
		}
		return fmt.Sprintf("%s on %s (≠ bsp %d)", ev, hash(w), k)
	case "shared":
		if tensor.SameBits(w, g.applied) {
			return fmt.Sprintf("%s on %s (= every update so far)", ev, hash(w))
		}
		return fmt.Sprintf("%s on %s (≠ every update so far)", ev, hash(w))
	}
	return ev
}

// sgd is every update, the ranks' and the center's: w -= lr·g.
func sgd(w, g []float32) { tensor.Axpy(-lr, g, w) }

// startWeights are every rank's weights before the first iteration.
func startWeights(n int) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(i) / 4
	}
	return w
}

// start makes the group a ranks command asks for, starts its ranks, and
// computes seq's weights for comparison.
func start(t *testing.T, d *datadriven.TestData) (*group, error) {
	sc := scheme.Config{Pack: true}
	params, layers := 8, 1
	d.ScanArgs(t, "n", &sc.Workers)
	d.ScanArgs(t, "scheme", &sc.Name)
	d.ScanArgs(t, "iters", &sc.MaxIter)
	d.MaybeScanArgs(t, "params", &params)
	d.MaybeScanArgs(t, "layers", &layers)
	d.MaybeScanArgs(t, "pack", &sc.Pack)
	d.MaybeScanArgs(t, "interval", &sc.Interval)
	d.MaybeScanArgs(t, "bucket", &sc.Bucket)
	d.MaybeScanArgs(t, "variant", &sc.Variant)
	d.MaybeScanArgs(t, "groups", &sc.Groups)
	d.MaybeScanArgs(t, "staleness", &sc.Staleness)
	var stragglers []int
	d.MaybeScanArgs(t, "straggle", &stragglers)
	var deadline time.Duration
	d.MaybeScanArgs(t, "deadline", &deadline)
	var computes string
	d.MaybeScanArgs(t, "computes", &computes)
	if computes != "" && computes != "order" && computes != "bsp" && computes != "shared" {
		return nil, fmt.Errorf("computes=%s: order, bsp or shared", computes)
	}
	alpha := 0.5
	d.MaybeScanArgs(t, "alpha", &alpha)
	sc.Alpha = float32(alpha)
	if layers < 1 || layers > params {
		return nil, fmt.Errorf("layers=%d for %d params", layers, params)
	}
	sc.Layout = scheme.Layout{N: params}
	for l := range layers {
		sc.Layout.Blocks = append(sc.Layout.Blocks, scheme.Range{Lo: l * params / layers, Hi: (l + 1) * params / layers})
	}
	progs, err := scheme.New(sc)
	if err != nil {
		return nil, err
	}
	seq, err := seqWeights(sc)
	if err != nil {
		return nil, err
	}
	g := &group{sc: sc, nw: scripted.New(len(progs)), seq: seq, inside: map[int]string{},
		computes: computes, bsp: bspWeights(sc), applied: startWeights(params)}
	if uses, n := sc.UsesCenter(); uses {
		cc := node.CenterConfig(sc, n, startWeights(params))
		cc.MaxIter = sc.MaxIter
		cc.Deadline = deadline
		if sc.Info().CenterSolver {
			cc.Update = func(w, g []float32, _ int) { sgd(w, g) }
		}
		if g.center, err = center.NewLocal(cc); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	eps := g.nw.Endpoints()
	var shared []float32 // the one set of weights of a scheme whose workers share it in memory (hogwild)
	if sc.Info().SharedWeights {
		shared = startWeights(params)
	}
	for i, p := range progs {
		rk := &rank{id: i}
		grads := make([]float32, params)
		w := shared
		if w == nil {
			w = startWeights(params)
		}
		nr := &node.Rank{Scheme: p, Ep: eps[i], Params: w, Grads: grads,
			Algo: func(a scheme.Algo) collective.Algorithm { return node.Algorithm(collective.Auto, a) }, Timeout: timeout}
		nr.Update = func(int) {
			sgd(nr.Params, grads)
			g.mu.Lock()
			sgd(g.applied, grads)
			g.mu.Unlock()
		}
		nr.OnIter = func(it int, _ float64) error {
			g.note(rk, fmt.Sprintf("iter %d done", it))
			return nil
		}
		nr.OnSkip = func(it int) { g.note(rk, fmt.Sprintf("iter %d skipped", it)) }
		if g.center != nil && i < sc.Workers {
			nr.Center, nr.CenterID = gate{g: g, rank: i, c: g.center}, sc.CenterID(i)
		}
		if i < sc.Workers {
			rk.comp = &computer{g: g, rank: i, params: w, grads: grads, blocks: sc.Layout.Blocks, wake: make(chan struct{})}
			nr.Computer = rk.comp
		}
		rk.node = nr
		g.ranks = append(g.ranks, rk)
	}
	for _, r := range stragglers {
		if r < 0 || r >= len(g.ranks) {
			return nil, fmt.Errorf("straggle=%d: no such rank", r)
		}
		if err := g.straggle(r); err != nil {
			return nil, err
		}
	}
	g.start = time.Now()
	for _, rk := range g.ranks {
		rctx, rcancel := context.WithCancel(ctx)
		rk.cancel = rcancel
		go g.run(rctx, rk)
	}
	return g, nil
}

// run runs a rank and records how it ended. A rank that fails aborts its
// endpoint with its error, as a run's rank does (train), so that its
// peers learn the first cause.
func (g *group) run(ctx context.Context, rk *rank) {
	err := rk.node.Run(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	rk.done, rk.err = true, err
	switch {
	case rk.crashed:
		rk.events = append(rk.events, "crashed")
	case err != nil:
		rk.events = append(rk.events, fmt.Sprintf("failed, blaming %s: %v", blame(err), err))
		transport.Abort(g.nw.Endpoints()[rk.id], fmt.Errorf("rank %d: %w", rk.id, err))
	default:
		rk.weights = append([]float32(nil), rk.node.Params...)
		rk.events = append(rk.events, "finished, weights "+g.weightsName(rk.weights))
	}
}

// seqWeights runs seq, the one-worker scheme, for sc's iterations over
// the mean of sc's workers' gradients, as the synchronous schemes
// compute it: the exact sum, then scaled by 1/workers.
func seqWeights(sc scheme.Config) ([]float32, error) {
	all := make([]int, sc.Workers)
	for r := range all {
		all[r] = r
	}
	return seqOf(sc, all)
}

// seqOf is seqWeights over the mean of the gradients of the workers ws
// only.
func seqOf(sc scheme.Config, ws []int) ([]float32, error) {
	c := sc
	c.Name, c.Workers = "seq", 1
	progs, err := scheme.New(c)
	if err != nil {
		return nil, err
	}
	w, grads := startWeights(sc.Layout.N), make([]float32, sc.Layout.N)
	one := make([]float32, len(grads))
	k := 0
	mean := computeFunc(func() {
		clear(grads)
		for _, r := range ws {
			grad(r, k, one)
			tensor.Axpy(1, one, grads)
		}
		tensor.Scale(1/float32(len(ws)), grads)
		k++
	})
	r := &node.Rank{Scheme: progs[0], Params: w, Grads: grads, Computer: mean, Update: func(int) { sgd(w, grads) }}
	if err := r.Run(context.Background()); err != nil {
		return nil, fmt.Errorf("seq: %w", err)
	}
	return w, nil
}

// bspWeights are the weights after 0, 1, ... sc.MaxIter bulk-synchronous
// iterations that step by the sum of every worker's gradients (group.bsp).
func bspWeights(sc scheme.Config) [][]float32 {
	w, g := startWeights(sc.Layout.N), make([]float32, sc.Layout.N)
	out := [][]float32{slices.Clone(w)}
	for k := range sc.MaxIter {
		for r := range sc.Workers {
			grad(r, k, g)
			sgd(w, g)
		}
		out = append(out, slices.Clone(w))
	}
	return out
}

// computeFunc is a node.Computer that runs a function.
type computeFunc func()

func (f computeFunc) Compute(context.Context, func(lo, hi int)) (float64, error) {
	f()
	return 1, nil
}

// note records an event of rk.
func (g *group) note(rk *rank, ev string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rk.events = append(rk.events, ev)
}

// straggle makes rank r's computes wait until released.
func (g *group) straggle(r int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.ranks[r].comp
	if c == nil {
		return fmt.Errorf("rank %d computes nothing", r)
	}
	if !c.straggle {
		c.straggle, c.straggled, c.pass = true, true, 0
		c.wake = make(chan struct{})
	}
	return nil
}

// release lets the compute rank r is held in and its next n−1 run, and
// holds the later ones again; n = 0 ends its straggling. A rank not held
// in a compute is refused n > 0, so that no compute of a script that
// steps them runs unheld.
func (g *group) release(r, n int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.ranks[r].comp
	switch {
	case c == nil:
		return fmt.Errorf("rank %d computes nothing", r)
	case n < 0:
		return fmt.Errorf("release n=%d", n)
	case n > 0 && !c.stalled:
		return fmt.Errorf("rank %d is not held in a compute", r)
	case !c.straggle:
		return nil
	case n == 0:
		c.straggle, c.pass = false, 0
	default:
		c.pass += n
	}
	close(c.wake)
	c.wake = make(chan struct{})
	return nil
}

// crash kills rank r: its endpoint closes as a dead process's, and its
// goroutines stop.
func (g *group) crash(r int) {
	g.mu.Lock()
	g.ranks[r].crashed = true
	g.mu.Unlock()
	g.nw.Crash(r)
	g.ranks[r].cancel()
}

// stop ends every rank and waits until their goroutines are gone.
func (g *group) stop() {
	g.cancel()
	synctest.Wait()
}

// settle waits until every rank has gone as far as it can (letting the
// center calls in by rounds, as gate says), and returns the messages
// delivered (msgs), what each rank did since, and any rank stuck where
// neither the transport, the center nor the script holds it.
func (g *group) settle(msgs []scripted.Msg) string {
	synctest.Wait()
	for round := g.waiting(); len(round) > 0; round = g.waiting() {
		for _, e := range round {
			g.admit(e)
			synctest.Wait()
		}
	}
	var b strings.Builder
	if len(msgs) > 0 {
		b.WriteString("delivered " + list(msgs, msgName) + "\n")
	}
	where := g.where()
	g.mu.Lock()
	defer g.mu.Unlock()
	held := 0
	for _, rk := range g.ranks {
		if rk.comp != nil && rk.comp.stalled {
			held++
		}
	}
	g.held = max(g.held, held)
	for _, rk := range g.ranks {
		for _, ev := range append(rk.events, rk.aborted...) {
			fmt.Fprintf(&b, "rank %d: %s\n", rk.id, ev)
		}
		rk.events, rk.aborted = nil, nil
		if where[rk.id] == stuck {
			fmt.Fprintf(&b, "rank %d: %s\n", rk.id, stuck)
		}
	}
	return b.String()
}

// stuck is where, in status, a rank is that is quiescent yet neither
// done, nor waiting for a message, the center or the script: a driver bug
// this is here to show.
const stuck = "stuck outside the transport"

// where says where each rank is: done, straggling, at or in the center,
// or waiting for messages (and from whom), else stuck.
func (g *group) where() []string {
	waits := map[int][]string{}
	for _, c := range g.nw.Blocked() {
		what := fmt.Sprintf("%d floats", c.Len)
		if c.Bytes {
			what = fmt.Sprintf("<= %d bytes", c.Len)
		}
		waits[c.Rank] = append(waits[c.Rank], fmt.Sprintf("rank %d (tag %x, %s)", c.Peer, c.Tag, what))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, len(g.ranks))
	for i, rk := range g.ranks {
		switch {
		case rk.crashed:
			out[i] = "crashed"
		case rk.done && rk.err != nil:
			out[i] = "failed"
		case rk.done:
			out[i] = "finished"
		case rk.comp != nil && rk.comp.stalled:
			out[i] = fmt.Sprintf("straggling in compute %d", rk.comp.calls-1)
		case g.gatedRank(rk.id):
			out[i] = "waiting at the center's gate"
		case g.inside[rk.id] != "":
			out[i] = "in the center's " + g.inside[rk.id]
		case len(waits[rk.id]) > 0:
			out[i] = "waiting on " + strings.Join(waits[rk.id], ", ")
		default:
			out[i] = stuck
		}
	}
	return out
}

// status reports where every rank is and what is in flight.
func (g *group) status() string {
	var b strings.Builder
	for r, w := range g.where() {
		fmt.Fprintf(&b, "rank %d: %s\n", r, w)
	}
	for _, l := range g.nw.Links() {
		fmt.Fprintf(&b, "%d→%d:", l.From, l.To)
		if l.Held {
			b.WriteString(" delayed")
		}
		if len(l.Queued) > 0 {
			b.WriteString(" queued " + list(l.Queued, payload))
		}
		if len(l.Delivered) > 0 {
			b.WriteString(" delivered " + list(l.Delivered, payload))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// gatedRank reports whether a center call of rank r waits at its gate.
// The caller holds mu.
func (g *group) gatedRank(r int) bool {
	for _, e := range g.gated {
		if e.rank == r {
			return true
		}
	}
	return false
}

// results reports each rank's outcome and compares the finished ranks'
// weights with each other and with seq's.
func (g *group) results() string {
	var b strings.Builder
	g.mu.Lock()
	defer g.mu.Unlock()
	var finished, same []int
	holders := map[string][]int{} // finished ranks by weights
	var order []string
	for _, rk := range g.ranks {
		fmt.Fprintf(&b, "rank %d: ", rk.id)
		if o := rk.unfinished(); o != "" {
			b.WriteString(o + "\n")
		} else {
			fmt.Fprintf(&b, "finished, weights %s\n", g.weightsName(rk.weights))
			finished = append(finished, rk.id)
			if tensor.SameBits(rk.weights, g.seq) {
				same = append(same, rk.id)
			}
			h := hash(rk.weights)
			if holders[h] == nil {
				order = append(order, h)
			}
			holders[h] = append(holders[h], rk.id)
		}
	}
	// A weed-out center that dropped gradients is compared with seq over
	// the workers that never straggled, whose gradients made the rounds.
	var fast []int
	var fastSeq []float32
	if g.center != nil && g.center.Stats().Dropped > 0 {
		for _, rk := range g.ranks {
			if rk.comp != nil && !rk.comp.straggled {
				fast = append(fast, rk.id)
			}
		}
		if len(fast) > 0 {
			var err error
			if fastSeq, err = seqOf(g.sc, fast); err != nil {
				fmt.Fprintf(&b, "seq of ranks %s: %v\n", ranks(fast), err)
			}
		}
	}
	if g.center != nil {
		if w, err := g.centerWeights(); err != nil {
			fmt.Fprintf(&b, "center: %v\n", err)
		} else {
			name := g.weightsName(w)
			if fastSeq != nil {
				name = fmt.Sprintf("%s, %s seq of ranks %s)", strings.TrimSuffix(name, ")"), is(w, fastSeq), ranks(fast))
			}
			if g.computes == "bsp" {
				// SSP with staleness 0 ends where BSP does.
				name = fmt.Sprintf("%s, %s bsp %d)", strings.TrimSuffix(name, ")"), is(w, g.bsp[len(g.bsp)-1]), len(g.bsp)-1)
			}
			fmt.Fprintf(&b, "center: weights %s\n", name)
		}
		if st := g.center.Stats(); st.Rounds > 0 {
			fmt.Fprintf(&b, "center: rounds %d, gradients dropped %d\n", st.Rounds, st.Dropped)
		}
	}
	fmt.Fprintf(&b, "seq: weights %s\n", hash(g.seq))
	if fastSeq != nil {
		fmt.Fprintf(&b, "seq of ranks %s: weights %s\n", ranks(fast), hash(fastSeq))
	}
	switch {
	case len(finished) == 0:
	case len(same) == len(finished):
		fmt.Fprintf(&b, "every finished rank (%s) holds seq's weights\n", ranks(finished))
	default:
		for _, h := range order {
			if rs := holders[h]; len(rs) == 1 {
				fmt.Fprintf(&b, "rank %d holds %s\n", rs[0], h)
			} else {
				fmt.Fprintf(&b, "ranks %s hold %s\n", ranks(rs), h)
			}
		}
	}
	if g.held > 0 {
		fmt.Fprintf(&b, "held computes at once, at most: %d\n", g.held)
	}
	return b.String()
}

// centerWeights reads the group's center's weights as an observer.
func (g *group) centerWeights() ([]float32, error) {
	w := make([]float32, len(g.seq))
	err := g.center.Pull(context.Background(), center.Observer, w)
	return w, err
}

// is is "=" when a and b hold the same bits, else "≠".
func is(a, b []float32) string {
	if tensor.SameBits(a, b) {
		return "="
	}
	return "≠"
}

func ranks(rs []int) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r)
	}
	return strings.Join(s, " ")
}

// weightsName is w's hash, marked when it is seq's.
func (g *group) weightsName(w []float32) string {
	if tensor.SameBits(w, g.seq) {
		return hash(w) + " (= seq)"
	}
	return hash(w) + " (≠ seq)"
}

// hash names weights by their bits.
func hash(w []float32) string {
	h := fnv.New32a()
	for _, v := range w {
		x := math.Float32bits(v)
		h.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// blame is the rank that the innermost *transport.PeerError of err
// names: the first cause of a failure that cascaded through the group.
func blame(err error) string {
	var pe *transport.PeerError
	who := "no rank"
	for errors.As(err, &pe) {
		who = fmt.Sprintf("rank %d", pe.Rank)
		err = pe.Err
	}
	return who
}

// msgName names a message by its link, tag (hex) and length (a b
// marks bytes).
func msgName(m scripted.Msg) string { return fmt.Sprintf("%d→%d %s", m.From, m.To, payload(m)) }

func payload(m scripted.Msg) string {
	kind := ""
	if m.IsBytes {
		kind = "b"
	}
	return fmt.Sprintf("%x/%d%s", m.Tag, m.Len(), kind)
}

func list(ms []scripted.Msg, name func(scripted.Msg) string) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = name(m)
	}
	return strings.Join(s, ", ")
}
