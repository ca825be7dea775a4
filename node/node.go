package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"dsgd/collective"
	"dsgd/scheme"
	"dsgd/tensor"
	"dsgd/transport"
)

// Computer runs one forward-backward pass of a rank's model on its next
// batch, writing the gradients into the Grads buffer, calling ready(lo,
// hi) from its own goroutine as soon as Grads[lo:hi] is final, and
// returning the loss. A parameter server rank has none.
type Computer interface {
	Compute(ctx context.Context, ready func(lo, hi int)) (loss float64, err error)
}

// Phase indices of a rank's time account (Stats.Phase). Compute time is
// the Computer's to account.
const (
	PhaseComm   = iota // exposed communication: waiting with no compute running
	PhaseUpdate        // scale, update and copies
)

// Rank is everything a driver needs to run one rank of a scheme.
type Rank struct {
	// Scheme is the rank's scheme logic.
	Scheme scheme.Rank
	// Ep connects the rank to the others; nil for a group of one.
	Ep transport.Endpoint
	// Buffers are the rank's Params, Grads and Aux buffers (Aux may be
	// nil if the scheme does not use it).
	Params, Grads, Aux []float32
	// Computer computes gradients; nil on a server rank.
	Computer Computer
	// Update applies the solver at iteration iter to Params from Grads.
	Update func(iter int)
	// OnIter is called after every IterDone with the iteration and the
	// rank's loss; an error ends the run. May be nil.
	OnIter func(iter int, loss float64) error
	// Algo maps the scheme's allreduce choice to a collective algorithm;
	// nil picks collective.Auto for every choice.
	Algo func(scheme.Algo) collective.Algorithm
	// Timeout bounds a wait for a peer (0: none beyond ctx).
	Timeout time.Duration

	// Stats accumulates the rank's time account.
	Stats Stats
}

// Stats is a rank's time account.
type Stats struct {
	// Time per phase (PhaseComm, PhaseUpdate).
	Phase [2]time.Duration
	// CommBusy is the time the communication goroutine spent working,
	// hidden or not.
	CommBusy time.Duration
	// Iters counts IterDone actions.
	Iters int
}

type event struct {
	ev   scheme.Event
	err  error
	busy time.Duration // communication time behind a Done
}

// Run drives the rank until its scheme finishes, an action fails, or ctx
// is cancelled. Errors name the rank.
func (r *Rank) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan event, 64)
	comm := make(chan scheme.Action, 256)
	commDone := make(chan struct{})
	go func() {
		defer close(commDone)
		r.commLoop(ctx, comm, events)
	}()
	// computing tracks the compute goroutine, which Run waits for before
	// returning, so the caller may read what Compute wrote.
	var computeWG sync.WaitGroup
	defer func() {
		close(comm)
		cancel()
		<-commDone
		computeWG.Wait()
	}()

	computing := false
	pendingComm := 0
	var ctxDone <-chan struct{} = ctx.Done()
	dispatch := func(acts []scheme.Action) (bool, error) {
		for _, a := range acts {
			switch {
			case a.Op == scheme.Finish:
				return true, nil
			case a.Op == scheme.Compute:
				if r.Computer == nil {
					return false, fmt.Errorf("scheme asked a rank with no model to compute")
				}
				computing = true
				watch := a.WatchGrads
				computeWG.Add(1)
				go func() {
					defer computeWG.Done()
					var ready func(lo, hi int)
					if watch {
						ready = func(lo, hi int) {
							select {
							case events <- event{ev: scheme.Event{Kind: scheme.GradsReady, Lo: lo, Hi: hi}}:
							case <-ctx.Done():
							}
						}
					}
					loss, err := r.Computer.Compute(ctx, ready)
					select {
					case events <- event{ev: scheme.Event{Kind: scheme.ComputeDone, Loss: loss}, err: err}:
					case <-ctx.Done():
					}
				}()
			case a.Op.IsComm():
				pendingComm++
				comm <- a
			default:
				t0 := time.Now()
				err := r.local(a)
				if a.Op != scheme.IterDone { // the hook's tests and snapshots are not update time
					r.Stats.Phase[PhaseUpdate] += time.Since(t0)
				}
				if err != nil {
					return false, err
				}
			}
		}
		return false, nil
	}
	if fin, err := dispatch(r.Scheme.Step(scheme.Event{Kind: scheme.Start})); fin || err != nil {
		return err
	}
	for {
		t0 := time.Now()
		var e event
		select {
		case e = <-events:
		case <-ctxDone:
			return ctx.Err()
		}
		if !computing && pendingComm > 0 {
			r.Stats.Phase[PhaseComm] += time.Since(t0)
		}
		if e.err != nil {
			return e.err
		}
		switch e.ev.Kind {
		case scheme.ComputeDone:
			computing = false
		case scheme.Done:
			pendingComm--
			r.Stats.CommBusy += e.busy
		}
		fin, err := dispatch(r.Scheme.Step(e.ev))
		if fin || err != nil {
			return err
		}
	}
}

// local runs a local action.
func (r *Rank) local(a scheme.Action) error {
	switch a.Op {
	case scheme.Scale:
		tensor.Scale(a.Factor, r.slice(a.R))
	case scheme.Update:
		r.Update(a.Iter)
	case scheme.Copy:
		copy(r.slice(a.R), r.slice(a.Src))
	case scheme.IterDone:
		r.Stats.Iters++
		if r.OnIter != nil {
			return r.OnIter(a.Iter, a.Loss)
		}
	default:
		return fmt.Errorf("node: unexpected action %v", a.Op)
	}
	return nil
}

func (r *Rank) slice(rg scheme.Range) []float32 {
	var b []float32
	switch rg.Buf {
	case scheme.Params:
		b = r.Params
	case scheme.Grads:
		b = r.Grads
	case scheme.Aux:
		b = r.Aux
	}
	return b[rg.Lo:rg.Hi]
}

// commLoop runs communication actions one at a time, in issue order.
func (r *Rank) commLoop(ctx context.Context, in <-chan scheme.Action, events chan<- event) {
	var scratch []float32
	var exec *collective.Executor
	if r.Ep != nil {
		exec = collective.NewExecutor(r.Ep)
		defer exec.Close()
	}
	for a := range in {
		t0 := time.Now()
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if r.Timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, r.Timeout)
		}
		err := r.comm(cctx, exec, a, &scratch)
		cancel()
		busy := time.Since(t0)
		if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("%v %v with rank %d: no answer within %v: %w", a.Op, a.R.Buf, a.Peer, r.Timeout, err)
		}
		select {
		case events <- event{ev: scheme.Event{Kind: scheme.Done, ID: a.ID}, err: err, busy: busy}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (r *Rank) comm(ctx context.Context, exec *collective.Executor, a scheme.Action, scratch *[]float32) error {
	buf := r.slice(a.R)
	switch a.Op {
	case scheme.Allreduce:
		if r.Ep == nil {
			return nil
		}
		alg := collective.Auto
		if r.Algo != nil {
			alg = r.Algo(a.Algo)
		}
		return exec.Allreduce(ctx, buf, alg)
	case scheme.Broadcast:
		return exec.Broadcast(ctx, a.Peer, buf)
	case scheme.Send:
		return r.Ep.Send(ctx, a.Peer, a.Tag, buf)
	case scheme.Recv:
		if !a.Add {
			return r.Ep.Recv(ctx, a.Peer, a.Tag, buf)
		}
		if cap(*scratch) < len(buf) {
			*scratch = make([]float32, len(buf))
		}
		s := (*scratch)[:len(buf)]
		if err := r.Ep.Recv(ctx, a.Peer, a.Tag, s); err != nil {
			return err
		}
		tensor.AddTo(buf, s)
		return nil
	}
	return fmt.Errorf("node: %v is not a communication action", a.Op)
}
