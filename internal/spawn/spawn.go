package spawn

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Proc is one child to start: this executable with Args.
type Proc struct {
	// Name says which child, in errors: "rank 3", "the center".
	Name string
	// Args follow the executable's path on the child's command line.
	// Secrets belong in Env: other users can read a command line.
	Args []string
	// Env is the child's whole environment; nil gives it this process's.
	Env []string
	// Stdout and Stderr receive the child's output; nil discards it.
	Stdout, Stderr io.Writer
	// HoldStdin connects the child's stdin to a pipe whose write end this
	// process holds until the child exits: the child reads end of file
	// when its parent dies.
	HoldStdin bool
}

// Options say how a group is stopped.
type Options struct {
	// Exe is the program to run; empty means this executable.
	Exe string
	// Stop is the signal a child gets when the group is stopped (its
	// context ends, Stop is called, or Linger runs out); nil means
	// SIGKILL. It is asked for at the time of stopping.
	Stop func() os.Signal
	// Grace is how long a child has after Stop's signal before it is
	// killed (and its output pipes closed); zero means 5 s.
	Grace time.Duration
	// Linger is how long after a child fails, while the group's context
	// is live, the others are stopped; negative: a failed child stops
	// none of the others.
	Linger time.Duration
}

// Exit is how one child ended.
type Exit struct {
	// Err is Wait's error: nil for exit status 0, an *exec.ExitError for
	// a non-zero status or a signal.
	Err error
	// Stopped reports that the group sent it Options.Stop's signal before
	// it had exited: its failure may be a consequence, not a cause.
	Stopped bool
}

// Group is a running group of children.
type Group struct {
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex // guards exits
	exits  []Exit
}

// Start starts one child per proc. The group is stopped when ctx ends.
// If a child cannot be started, the ones already running are stopped and
// reaped before Start returns the error, naming the child.
func Start(ctx context.Context, procs []Proc, o Options) (*Group, error) {
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("cannot find this program to start %d processes: %w", len(procs), err)
		}
	}
	grace := o.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	gctx, cancel := context.WithCancel(ctx)
	g := &Group{cancel: cancel, done: make(chan struct{}), exits: make([]Exit, len(procs))}
	for i, p := range procs {
		cmd := exec.CommandContext(gctx, exe, p.Args...)
		cmd.Env = p.Env
		cmd.Stdout, cmd.Stderr = p.Stdout, p.Stderr
		cmd.Cancel = func() error {
			g.mu.Lock()
			g.exits[i].Stopped = true
			g.mu.Unlock()
			var sig os.Signal = syscall.SIGKILL
			if o.Stop != nil {
				if s := o.Stop(); s != nil {
					sig = s
				}
			}
			return cmd.Process.Signal(sig)
		}
		cmd.WaitDelay = grace
		ownGroup(cmd)
		if p.HoldStdin {
			// The write end stays open until Wait closes it.
			if _, err := cmd.StdinPipe(); err != nil {
				g.abort()
				return nil, fmt.Errorf("starting %s: %w", p.Name, err)
			}
		}
		if err := cmd.Start(); err != nil {
			g.abort()
			return nil, fmt.Errorf("starting %s: %w", p.Name, err)
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			err := cmd.Wait()
			g.mu.Lock()
			g.exits[i].Err = err
			g.mu.Unlock()
			if err != nil && o.Linger >= 0 && ctx.Err() == nil {
				time.AfterFunc(o.Linger, cancel)
			}
		}()
	}
	go func() {
		g.wg.Wait()
		close(g.done)
	}()
	return g, nil
}

// abort stops and reaps what Start has started so far.
func (g *Group) abort() {
	g.cancel()
	g.wg.Wait()
}

// Stop stops every child still running with Options.Stop's signal.
func (g *Group) Stop() { g.cancel() }

// Done is closed once every child has exited and been reaped.
func (g *Group) Done() <-chan struct{} { return g.done }

// Wait waits for every child and returns how each ended, in the order of
// the procs given to Start.
func (g *Group) Wait() []Exit {
	<-g.done
	g.cancel() // release the context's resources
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Exit(nil), g.exits...)
}

// Failed reports whether any child ended with an error.
func Failed(exits []Exit) bool {
	for _, e := range exits {
		if e.Err != nil {
			return true
		}
	}
	return false
}
