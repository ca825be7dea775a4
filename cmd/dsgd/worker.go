package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"dsgd/comm/compress"
	"dsgd/comm/elastic"
	"dsgd/comm/transport"
	"dsgd/comm/transport/mpi"
	"dsgd/comm/transport/tcp"
	"dsgd/internal/launcher"
	"dsgd/internal/spawn"
	"dsgd/protocol/scheme"
	"dsgd/training/timeline"
)

// groupFlags place a process in a multi-process group. Each may come from
// a flag or from the environment of a launcher (see resolve).
type groupFlags struct {
	rank, world int
	rendezvous  string
	token       string
	tokenFile   string
	listen      string
	env         string // where rank and world came from, for messages
	// launcher is what the launcher said (nil without one); auto is the
	// note on a rendezvous derived from it (empty when given).
	launcher *launcher.Info
	auto     string
	// serve makes the process the parameter server of an asynchronous
	// scheme, listening on listen.
	serve bool
	// mpi is this rank's endpoint under --transport mpi (worker_mpi.go);
	// native, when --allreduce mpi, the same with MPI's collectives.
	mpi    *mpi.Endpoint
	native transport.Endpoint
}

func (g *groupFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&g.rank, "rank", -1, "this process's rank (default: from OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK)")
	fs.IntVar(&g.world, "world", 0, "number of ranks in the group (default: from OMPI_COMM_WORLD_SIZE, SLURM_NTASKS or WORLD_SIZE)")
	fs.StringVar(&g.rendezvous, "rendezvous", "", "`HOST:PORT` where rank 0 gathers the group (default: MASTER_ADDR:MASTER_PORT, or DSGD_RENDEZVOUS)")
	fs.StringVar(&g.token, "token", "", tokenUsage)
	fs.StringVar(&g.tokenFile, "token-file", "", tokenFileUsage)
	fs.StringVar(&g.listen, "listen", "127.0.0.1:0", "`HOST:PORT` for this rank's data connections (loopback unless told otherwise; 0.0.0.0:0 for multi-host)")
}

// resolve fills what the flags left unset from the environment: a
// launcher's (see fromLauncher), then MASTER_ADDR/MASTER_PORT,
// DSGD_RENDEZVOUS and DSGD_TOKEN.
func (g *groupFlags) resolve(getenv func(string) string) error {
	if err := g.fromLauncher(getenv); err != nil {
		return err
	}
	if g.rank < 0 || g.world <= 0 {
		return errors.New("no rank and world size: pass --rank and --world, or run under mpirun, srun, or with RANK and WORLD_SIZE set")
	}
	if g.rank >= g.world {
		return fmt.Errorf("rank %d out of range for a world of %d", g.rank, g.world)
	}
	if g.rendezvous == "" {
		if a, p := getenv("MASTER_ADDR"), getenv("MASTER_PORT"); a != "" && p != "" {
			g.rendezvous = net.JoinHostPort(a, p)
		} else {
			g.rendezvous = getenv("DSGD_RENDEZVOUS")
		}
	}
	if g.rendezvous == "" && g.world > 1 && g.launcher != nil {
		if err := g.loopbackRendezvous(); err != nil {
			return err
		}
	}
	if g.rendezvous == "" && g.world > 1 {
		return errors.New("no rendezvous address: pass --rendezvous HOST:PORT, or set MASTER_ADDR and MASTER_PORT (or DSGD_RENDEZVOUS)")
	}
	var err error
	g.token, err = resolveToken(g.token, g.tokenFile, getenv)
	g.jobToken()
	return err
}

func (g *groupFlags) connect(ctx context.Context, hash uint64, timeout time.Duration, compressFlag, shmMode string) (transport.Endpoint, error) {
	if g.mpi != nil {
		return g.connectMPI(ctx, hash, timeout)
	}
	cfg, err := g.tcpConfig(compressFlag, shmMode)
	if err != nil {
		return nil, err
	}
	cfg.Rank, cfg.Size, cfg.Rendezvous, cfg.ModelHash, cfg.Timeout = g.rank, g.world, g.rendezvous, hash, timeout
	ep, err := tcp.Connect(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("rank %d of %d joining %s: %w%s", g.rank, g.world, g.rendezvous, err, g.autoHint())
	}
	return ep, nil
}

// tcpConfig is the tcp transport's configuration from the flags that do
// not change with the group's membership: the address to listen on, the
// token, the wire's encoding and shared memory.
func (g *groupFlags) tcpConfig(compressFlag, shmMode string) (tcp.Config, error) {
	c := tcp.CompressNone
	if spec, err := compress.Parse(compressFlag); err != nil {
		return tcp.Config{}, fmt.Errorf("--compress: %w", err)
	} else if spec.Kind == compress.FP16 {
		// The gradient compressors run above the transport; fp16 alone
		// is the wire's.
		c = tcp.CompressFP16
	}
	sm, err := tcp.ParseShm(shmMode)
	if err != nil {
		return tcp.Config{}, fmt.Errorf("--shm: %w", err)
	}
	return tcp.Config{Listen: g.listen, Token: g.token, Compress: c, Shm: sm}, nil
}

// runWorker runs one rank of a training job whose ranks are separate
// processes, possibly on separate hosts.
func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runRank(ctx, "worker", args, stdout, stderr)
}

// runPS runs the parameter server of a sync-ps job: the last rank.
func runPS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runRank(ctx, "ps", args, stdout, stderr)
}

func runRank(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var f trainFlags
	var g groupFlags
	f.register(fs)
	g.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	// The launcher said what it restored; a rank restores the same.
	if err := restoreRun(fs, *f.resume, io.Discard); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		fmt.Fprintf(stderr, "dsgd %s: %v\n", name, err)
		return errUsage
	}
	if name == "ps" && centerScheme(*f.scheme, *f.workers) {
		if *f.workers < 1 {
			fmt.Fprintf(stderr, "dsgd ps: --scheme %s needs --workers N\n", *f.scheme)
			return errUsage
		}
		g.rank, g.world, g.serve = 0, *f.workers, true
		if g.listen == "127.0.0.1:0" {
			g.listen = "127.0.0.1:7077"
		}
		tok, err := resolveToken(g.token, g.tokenFile, os.Getenv)
		if err != nil {
			fmt.Fprintf(stderr, "dsgd ps: %v\n", err)
			return errUsage
		}
		g.token = tok
		return execute(ctx, &f, &g, stdout, stderr)
	}
	if err := f.elastic.check(&f); err != nil {
		fmt.Fprintf(stderr, "dsgd %s: %v\n", name, err)
		return errUsage
	}
	if f.elastic.on() {
		if *f.elastic.coordinator == "" {
			fmt.Fprintf(stderr, "dsgd %s: --elastic needs --elastic-coordinator HOST:PORT, the group's coordinator (dsgd train --transport tcp --elastic prints it)\n", name)
			return errUsage
		}
		// The coordinator places the worker; a joiner starts as one of one.
		if g.rank < 0 || g.world <= 0 {
			// sync-ps's server rank comes on top of the workers.
			g.rank, g.world = 0, max(*f.workers, 1)+scheme.Config{Name: f.schemeName(), Variant: *f.variant}.Ranks()
		}
		if g.rendezvous == "" {
			g.rendezvous = "-" // each generation's comes from the coordinator
		}
	}
	if centerScheme(*f.scheme, *f.workers) && g.rendezvous == "" {
		g.rendezvous = "-" // the workers meet at the center, not at a rendezvous
	}
	if name == "ps" {
		if *f.scheme == "" {
			*f.scheme = "sync-ps"
		}
		if in, _ := scheme.Lookup(*f.scheme); !in.ServerUpdates {
			fmt.Fprintf(stderr, "dsgd ps: --scheme %s has no parameter server rank to run (sync-ps has one; the asynchronous schemes serve a center)\n", *f.scheme)
			return errUsage
		}
		if g.world == 0 && *f.workers > 1 {
			g.world = *f.workers + 1
		}
		if g.rank < 0 && g.world > 0 {
			g.rank = g.world - 1
		}
	}
	if *f.transport == "mpi" || *f.algo == allreduceMPI {
		if err := g.joinMPI(&f); err != nil {
			fmt.Fprintf(stderr, "dsgd %s: %v\n", name, err)
			return errUsage
		}
	} else if err := g.resolve(os.Getenv); err != nil {
		fmt.Fprintf(stderr, "dsgd %s: %v\n", name, err)
		return errUsage
	}
	if g.auto != "" && g.rank == 0 {
		fmt.Fprint(stdout, g.auto)
	}
	// The world size fixes the worker count: every rank, or all but the
	// server under sync-ps.
	ws := g.world
	// The server, or sync-easgd's separate master, is the last rank: the
	// ranks of a scheme of no workers are its servers.
	ws -= scheme.Config{Name: f.schemeName(), Variant: *f.variant}.Ranks()
	if *f.workers > 1 && *f.workers != ws {
		fmt.Fprintf(stderr, "dsgd %s: --workers %d disagrees with a world of %d ranks under %s\n", name, *f.workers, g.world, f.schemeName())
		return errUsage
	}
	*f.workers = max(ws, 1)
	if *f.scheme == "" && ws > 1 {
		*f.scheme = "sync-tree"
	}
	return g.finishMPI(execute(ctx, &f, &g, stdout, stderr))
}

// centerScheme reports whether scheme's workers talk only to a center.
func centerScheme(name string, workers int) bool {
	return scheme.Config{Name: name, Workers: max(workers, 1)}.CenterOnly()
}

// launch runs a --transport tcp job on this host: one child process per
// rank, joined over loopback TCP. Rank 0's output is ours; the others'
// errors are shown with their rank.
//
// The children run in a process group of their own, so a terminal's
// Ctrl-C reaches the launcher alone, which forwards that signal once to
// every rank (each snapshots and stops) and stops the center only once
// the workers are done. They get the group's random token and any --store
// URL through the environment, never the command line (other users can
// read argv). Under a synchronous scheme a rank that dies takes the group
// down (the others stop 10 s later at most, with a signal, not a kill);
// under an asynchronous one the other workers train on.
func launch(ctx context.Context, args []string, f *trainFlags, stdout, stderr io.Writer) error {
	sc := scheme.Config{Name: f.schemeName(), Workers: *f.workers, Variant: *f.variant}
	world := sc.Ranks()
	// Two addresses at once: the rendezvous, and the center's when the
	// scheme has one (picked apart, so they cannot coincide).
	two, err := spawn.LoopbackAddrs(2)
	if err != nil {
		return fmt.Errorf("--transport tcp: %w", err)
	}
	addr := two[0]
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	token := hex.EncodeToString(tok)
	if t := os.Getenv("DSGD_TOKEN"); t != "" && f.elastic.on() {
		token = t // the user's: a worker they start later joins with it
	}
	base := append(stripFlag(stripFlag(args, "transport"), "store"), "--threads", strconv.Itoa(max(1, f.m.threads/world))) // the cores are shared
	// The ranks are ours: a launcher's variables (when this process was
	// started by one) would contradict their --rank and --world.
	env := append(launcher.Strip(os.Environ()), "DSGD_CHILD=1", "DSGD_TOKEN="+token)
	if url := f.center.storeURL(); url != "" {
		env = append(env, "DSGD_STORE="+url)
	}
	// A stopped child gets the signal the launcher got (SIGTERM when
	// none), so that it snapshots; it is killed only if it has not exited
	// grace later.
	stop := spawn.Options{Grace: graceFromEnv(stderr), Stop: func() os.Signal {
		if sig := signalOf(ctx); sig != nil {
			return sig
		}
		return syscall.SIGTERM
	}}
	// An asynchronous scheme's workers meet at their center: a parameter
	// server (or, for seasgd and hybrid's group roots, a shared buffer
	// server) in a process of its own, which this launcher stops once the
	// workers are done. Hybrid's workers also form a group.
	async := centerScheme(sc.Name, sc.Workers)
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
		// --metrics-listen is rank 0's: the training's metrics, on the
		// address the user gave (the center would take it first).
		sargs := append([]string{"ps", "--listen", addr}, stripFlag(base, "metrics-listen")...)
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
			return fmt.Errorf("--transport tcp: %w", err)
		}
		defer server.Stop()
		addr = two[1] // the workers' rendezvous
	}
	var coord *elastic.Coordinator
	if f.elastic.on() {
		if coord, err = startCoordinator(ctx, f, sc.Workers, sc.Info().ServerUpdates, token, stderr); err != nil {
			return fmt.Errorf("--elastic: %w", err)
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
		return fmt.Errorf("--transport tcp: %w", err)
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
	if *f.timeline != "" {
		mergeTimelines(*f.timeline, world, server != nil, stderr)
	}
	var msgs []string
	if centerFailure != "" {
		msgs = append(msgs, centerFailure)
	}
	if signalOf(ctx) != nil && centerFailure == "" {
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

// stripFlag removes -name/--name and its value from args.
func stripFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		trimmed := strings.TrimLeft(a, "-")
		if trimmed == name && a != trimmed {
			i++ // the value follows
			continue
		}
		if strings.HasPrefix(trimmed, name+"=") && a != trimmed {
			continue
		}
		out = append(out, a)
	}
	return out
}

func freeLoopbackAddr() (string, error) {
	a, err := freeLoopbackAddrs(1)
	if err != nil {
		return "", err
	}
	return a[0], nil
}

// freeLoopbackAddrs returns n distinct free loopback addresses
// (spawn.LoopbackAddrs).
func freeLoopbackAddrs(n int) ([]string, error) { return spawn.LoopbackAddrs(n) }

// resumeHint is the note a rank stopped by a signal adds to its error once
// it has written its snapshot (train's snapshot-on-stop).
var resumeHint = regexp.MustCompile(`\(snapshot of iteration \d+ written to [^\n]*; continue with --resume [^\n]*\)`)

// interruptedRanks is what a --transport tcp launcher stopped by a signal
// reports of its ranks, from their standard errors: the snapshot and the
// resume hint once (rank 0's, which wrote it), and any other line a rank
// wrote (a warning), once however many ranks wrote it, with its rank;
// not each rank's note that it was interrupted nor its "context canceled",
// which say again what the launcher's own line said.
func interruptedRanks(outs []string) error {
	hint := ""
	seen := map[string]bool{}
	var lines []string
	for r, out := range outs {
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(l)
			if h := resumeHint.FindString(l); h != "" {
				if hint == "" {
					hint = h
				}
				continue
			}
			if l == "" || strings.Contains(l, ": stopping after a snapshot (") || strings.HasSuffix(l, context.Canceled.Error()) || strings.HasSuffix(l, ": interrupted") || seen[l] {
				continue
			}
			seen[l] = true
			lines = append(lines, fmt.Sprintf("rank %d: %s", r, l))
		}
	}
	msg := "interrupted"
	if hint != "" {
		msg += " " + hint
	}
	if len(lines) > 0 {
		msg += "\n" + strings.Join(lines, "\n")
	}
	return errors.New(msg)
}

// liveLines passes the lines that several processes write on to one
// writer as each line completes, prefixed "[NAME] " with the writer's
// name, and each text once: the same warning from every rank is shown
// once, by the first to write it.
type liveLines struct {
	mu    sync.Mutex
	w     io.Writer
	seen  map[string]bool
	parts []*liveWriter
}

func newLiveLines(w io.Writer) *liveLines {
	return &liveLines{w: w, seen: map[string]bool{}}
}

// writer returns the io.Writer for the process called name.
func (l *liveLines) writer(name string) io.Writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	lw := &liveWriter{l: l, prefix: "[" + name + "] "}
	l.parts = append(l.parts, lw)
	return lw
}

// flush passes on every writer's unfinished last line.
func (l *liveLines) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.parts {
		if len(p.buf) > 0 {
			l.line(p.prefix, string(p.buf))
			p.buf = p.buf[:0]
		}
	}
}

// line writes text with prefix unless it was written before, or is what
// the launcher reports itself: a process's closing error ("dsgd worker:
// ...", "dsgd ps: ...", in the launcher's summary with its rank) or the
// interrupt notice the launcher printed first; l.mu held.
func (l *liveLines) line(prefix, text string) {
	text = strings.TrimRight(text, "\r")
	if strings.TrimSpace(text) == "" || l.seen[text] || reportedByLauncher(text) {
		return
	}
	l.seen[text] = true
	fmt.Fprintf(l.w, "%s%s\n", prefix, text)
}

type liveWriter struct {
	l      *liveLines
	prefix string
	buf    []byte
}

func (w *liveWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.l.line(w.prefix, string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// reportedByLauncher reports whether a child's stderr line is one the
// launcher reports itself, so that the live stream leaves it out.
func reportedByLauncher(text string) bool {
	for _, p := range []string{"dsgd worker: ", "dsgd ps: ", "dsgd smb: "} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return stopNotice.MatchString(text)
}

// stopNotice is a child's line that a signal stops it after a snapshot:
// the launcher got the signal, or sent it, and says so itself.
var stopNotice = regexp.MustCompile(`^dsgd: [a-z ]+: stopping after a snapshot`)

// mergeTimelines puts the traces that a --transport tcp job's processes
// wrote (PATH by rank 0, PATH.rankN, PATH.center) into one at PATH, each
// process a group of tracks on one clock, and removes the per-process
// files. A trace that cannot be read (a process killed while writing it)
// leaves every file as it is, with a warning naming it.
func mergeTimelines(path string, world int, center bool, stderr io.Writer) {
	type file struct {
		name, path string
		pid        int
	}
	files := []file{{"rank 0", path, 0}}
	for r := 1; r < world; r++ {
		files = append(files, file{"rank " + strconv.Itoa(r), fmt.Sprintf("%s.rank%d", path, r), r})
	}
	if center {
		files = append(files, file{"center", path + ".center", world})
	}
	var parts []timeline.Part
	var used []string
	for _, fl := range files {
		data, err := os.ReadFile(fl.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "dsgd: warning: --timeline: %v; the per-process traces are left unmerged\n", err)
			return
		}
		parts = append(parts, timeline.Part{Name: fl.name, Pid: fl.pid, R: bytes.NewReader(data)})
		used = append(used, fl.path)
	}
	if len(parts) < 2 {
		return
	}
	tmp := path + ".merging"
	out, err := os.Create(tmp)
	var notes []string
	if err == nil {
		// A rank that died (an elastic group goes on without it) left
		// its trace cut short: its events up to then are merged.
		notes, err = timeline.MergeNotes(out, parts)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		fmt.Fprintf(stderr, "dsgd: warning: --timeline: %v; the per-process traces (%s) are left unmerged\n", err, strings.Join(used, ", "))
		return
	}
	for _, u := range used[1:] {
		os.Remove(u)
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "dsgd: timeline: %s\n", n)
	}
	fmt.Fprintf(stderr, "dsgd: timeline: %d processes' traces merged into %s, one process per rank on one clock\n", len(used), path)
}
