package launch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"dsgd/comm/elastic"
	"dsgd/internal/launcher"
	"dsgd/internal/spawn"
	"dsgd/protocol/scheme"
)

// Config is a job to launch: the scheme and its workers, the flags every
// child gets, and where the children's output goes.
type Config struct {
	// Scheme is the job's scheme (Name, Workers, Variant): it fixes the
	// ranks and whether a center runs beside them.
	Scheme scheme.Config
	// Args are the flags every child runs with, those of the command
	// that launches them less what Run gives each child itself (its
	// rank, the world, the rendezvous, the center's address).
	Args []string
	// CenterArgs are the flags of the center's process (a parameter
	// server's; a shared buffer server takes none); nil: Args.
	CenterArgs []string
	// Threads is the threads each rank computes with (the caller's
	// share of the cores).
	Threads int
	// Store is the URL of the center's weight store (DSGD_STORE), if any.
	Store string
	// Token is the group's token; empty: a random one.
	Token string
	// Elastic, when set, makes the workers an elastic group whose
	// membership a coordinator in this process serves.
	Elastic *Elastic
	// Timeline is the trace file rank 0 writes (PATH.rankN the other
	// ranks, PATH.center the center), merged into one at the end; empty:
	// none.
	Timeline string
	// Grace is how long a stopped child may take to exit before it is
	// killed.
	Grace time.Duration
	// Signal is the stop signal this process received, if any (nil:
	// none); a stopped child gets it (SIGTERM when none), so that it
	// snapshots.
	Signal func() os.Signal
	// Stdout receives rank 0's standard output (every rank's, for an
	// elastic group, whose rank 0 may change); Stderr the lines every
	// process writes on its standard error, and Run's notes.
	Stdout, Stderr io.Writer
}

// Elastic is an elastic group's membership: its bounds and how long the
// coordinator waits for a member that says nothing.
type Elastic struct {
	// Min and Max are the group's bounds: fewer than Min workers end
	// the run, and no more than Max take part.
	Min, Max int
	// Spec is the bounds as the user gave them (MIN:MAX), for the note
	// on how a worker joins.
	Spec string
	// Timeout is how long a re-forming group waits for a member that
	// says nothing (the workers' communication timeout).
	Timeout time.Duration
}

// StartError is a job that could not start: no free addresses, the
// center or a rank that could not be started (Elastic false), or the
// elastic coordinator (Elastic true).
type StartError struct {
	Elastic bool
	Err     error
}

// Error names what could not start: the elastic coordinator by its
// Config field, else the processes.
func (e *StartError) Error() string {
	if e.Elastic {
		return "Config.Elastic: " + e.Err.Error()
	}
	return "starting the processes: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// Run launches the job cfg describes, waits for it to end and returns
// its outcome: nil once every rank has finished (or, in an elastic
// group, some have and the others left it), else what failed, each line
// with its process.
//
// The children run in process groups of their own, so a terminal's
// Ctrl-C reaches this process alone, which forwards that signal once to
// every rank (each snapshots and stops) and stops the center only once
// the workers are done.
func Run(ctx context.Context, cfg Config) error {
	sc := cfg.Scheme
	stdout, stderr := cfg.Stdout, cfg.Stderr
	world := sc.Ranks()
	// Two addresses at once: the rendezvous, and the center's when the
	// scheme has one (picked apart, so they cannot coincide).
	two, err := spawn.LoopbackAddrs(2)
	if err != nil {
		return &StartError{Err: err}
	}
	addr := two[0]
	token := cfg.Token
	if token == "" {
		tok := make([]byte, 16)
		if _, err := rand.Read(tok); err != nil {
			return err
		}
		token = hex.EncodeToString(tok)
	}
	threads := []string{"--threads", strconv.Itoa(max(1, cfg.Threads/world))} // the cores are shared
	base := slices.Concat(cfg.Args, threads)
	// The ranks are ours: a launcher's variables (when this process was
	// started by one) would contradict their --rank and --world.
	env := append(launcher.Strip(os.Environ()), "DSGD_CHILD=1", "DSGD_TOKEN="+token)
	if cfg.Store != "" {
		env = append(env, "DSGD_STORE="+cfg.Store)
	}
	// A stopped child gets the signal the launcher got (SIGTERM when
	// none), so that it snapshots; it is killed only if it has not exited
	// grace later.
	stop := spawn.Options{Grace: cfg.Grace, Stop: func() os.Signal {
		if cfg.Signal != nil {
			if sig := cfg.Signal(); sig != nil {
				return sig
			}
		}
		return syscall.SIGTERM
	}}
	// An asynchronous scheme's workers meet at their center: a parameter
	// server (or, for seasgd and hybrid's group roots, a shared buffer
	// server) in a process of its own, which this launcher stops once the
	// workers are done. Hybrid's workers also form a group.
	async := sc.CenterOnly()
	var server *spawn.Group
	var serverOut bytes.Buffer
	// What the ranks and the center write on stderr (warnings, notes,
	// errors) reaches the user as it comes, each line once however many
	// ranks say it; the buffers keep it for the failure report.
	live := newLiveLines(stderr)
	defer live.flush()
	serverCmd := "" // the center's subcommand: ps or smb
	centerAddr := ""
	if in := sc.Info(); in.Center != scheme.NoCenter {
		cargs := cfg.CenterArgs
		if cargs == nil {
			cargs = cfg.Args
		}
		sargs := slices.Concat([]string{"ps", "--listen", addr}, cargs, threads)
		centerAddr = addr
		if in.SharedBuffers {
			sargs = []string{"smb", "--listen", addr}
			centerAddr = "smb://" + addr
		}
		// The center outlives ctx's cancellation: it is stopped once the
		// workers have exited, so they can fetch the model to snapshot it.
		so := stop
		so.Linger = -1
		serverCmd = sargs[0]
		// One writer for both streams: one pipe, one goroutine writing.
		centerOut := io.MultiWriter(&serverOut, live.writer("center"))
		server, err = spawn.Start(context.WithoutCancel(ctx), []spawn.Proc{{Name: "the center", Args: sargs, Env: env, Stdout: centerOut, Stderr: centerOut}}, so)
		if err != nil {
			return &StartError{Err: err}
		}
		defer server.Stop()
		addr = two[1] // the workers' rendezvous
	}
	var coord *elastic.Coordinator
	if cfg.Elastic != nil {
		if coord, err = startCoordinator(ctx, cfg.Elastic, sc.Workers, sc.Info().ServerUpdates, token, stderr); err != nil {
			return &StartError{Elastic: true, Err: err}
		}
		defer coord.Close()
		// Whichever worker is rank 0 prints: one writer for them all.
		stdout = &syncWriter{w: stdout}
	}
	outs := make([]*bytes.Buffer, world)
	procs := make([]spawn.Proc, world)
	for r := range world {
		cargs := append([]string{"worker", "--rank", strconv.Itoa(r), "--world", strconv.Itoa(world), "--rendezvous", addr}, base...)
		if centerAddr != "" {
			cargs = append(cargs, "--center", centerAddr)
		}
		if coord != nil {
			cargs = append(cargs, "--elastic-coordinator", coord.Addr())
		}
		outs[r] = &bytes.Buffer{}
		procs[r] = spawn.Proc{Name: "rank " + strconv.Itoa(r), Args: cargs, Env: env, Stderr: io.MultiWriter(outs[r], live.writer("rank "+strconv.Itoa(r)))}
		if r == 0 || coord != nil {
			procs[r].Stdout = stdout
		}
	}
	// A synchronous group cannot go on without a rank that died: the
	// others get a moment to report their own view, then are stopped
	// (they snapshot). An asynchronous one trains on.
	wo := stop
	wo.Linger = 10 * time.Second
	if async || coord != nil {
		wo.Linger = -1
	}
	workers, err := spawn.Start(ctx, procs, wo)
	if err != nil {
		if server != nil {
			server.Stop()
			server.Wait()
		}
		return &StartError{Err: err}
	}
	// A center that dies while the workers run is reported at once, with
	// its last words, and the workers are stopped: they could only wait
	// for it until --comm-timeout and report "connection refused".
	var centerFailure string
	watched := make(chan struct{})
	if server != nil {
		go func() {
			defer close(watched)
			select {
			case <-server.Done():
				if ex := server.Wait(); len(ex) > 0 && ex[0].Err != nil && !ex[0].Stopped {
					centerFailure = fmt.Sprintf("the center (dsgd %s, listening on %s) exited while the workers ran: %v%s", serverCmd, centerAddr, ex[0].Err, lastLines(serverOut.String(), 6))
					workers.Stop()
				}
			case <-workers.Done():
			}
		}()
	} else {
		close(watched)
	}
	exits := workers.Wait()
	<-watched
	live.flush()
	if server != nil {
		select {
		case <-server.Done():
		case <-time.After(2 * time.Second):
			server.Stop() // the shared buffer server does not stop by itself
		}
		server.Wait()
	}
	if cfg.Timeline != "" {
		mergeTimelines(cfg.Timeline, world, server != nil, stderr)
	}
	var msgs []string
	if centerFailure != "" {
		msgs = append(msgs, centerFailure)
	}
	if cfg.Signal != nil && cfg.Signal() != nil && centerFailure == "" {
		texts := make([]string, len(outs))
		for r, o := range outs {
			texts[r] = o.String()
		}
		return interruptedRanks(texts)
	}
	finished := 0
	for _, e := range exits {
		if e.Err == nil {
			finished++
		}
	}
	for r, e := range exits {
		if e.Err == nil {
			continue
		}
		if coord != nil && finished > 0 {
			// The group went on without it: say so, and succeed.
			fmt.Fprintf(stderr, "dsgd: rank %d left the elastic group (%v); the others finished the run\n", r, e.Err)
			continue
		}
		text := strings.TrimSpace(outs[r].String())
		if text == "" {
			text = e.Err.Error()
		}
		// Every line carries its rank: a rank's warnings come with
		// its error now that they are on stderr.
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				msgs = append(msgs, fmt.Sprintf("rank %d: %s", r, l))
			}
		}
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "\n"))
	}
	return ctx.Err()
}

// lastLines is the last n lines of out, each indented on a line of its
// own, or "" when out is empty.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	lines = lines[max(0, len(lines)-n):]
	return "; its last output:\n    " + strings.Join(lines, "\n    ")
}

// syncWriter serialises writes to w from several goroutines (the ranks'
// stdout copies under an elastic launcher, where rank 0 may change).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// startCoordinator serves the membership of the launcher's elastic group
// on loopback, logging its generations to stderr.
func startCoordinator(ctx context.Context, e *Elastic, workers int, server bool, token string, stderr io.Writer) (*elastic.Coordinator, error) {
	var mu sync.Mutex
	c, err := elastic.Listen("127.0.0.1:0", elastic.Config{Min: e.Min, Max: e.Max, Want: workers, Server: server, Token: token, Timeout: e.Timeout,
		Logf: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "dsgd: "+format+"\n", args...)
		}})
	if err != nil {
		return nil, err
	}
	go c.Serve(context.WithoutCancel(ctx))
	fmt.Fprintf(stderr, "dsgd: elastic coordinator on %s: a worker joins with dsgd worker --elastic %s --elastic-coordinator %s (same flags, DSGD_TOKEN as this launcher's)\n", c.Addr(), e.Spec, c.Addr())
	return c, nil
}
