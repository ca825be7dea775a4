package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dsgd/protocol/center"
	"dsgd/servers/ps"
	"dsgd/servers/redisstore"
	"dsgd/servers/smb"
	"dsgd/training/train"
)

// centerFlags say where a worker process of an asynchronous scheme finds
// its center.
type centerFlags struct {
	addr, store, shard, job *string
}

func (c *centerFlags) register(fs interface {
	String(name, value, usage string) *string
}) {
	c.addr = fs.String("center", "", "asynchronous schemes in worker processes: the parameter server `HOST:PORT` (several, comma-separated, for a sharded one), or smb://HOST:PORT for the shared buffer server (seasgd)")
	c.shard = fs.String("shard", "", "dsgd ps: serve shard `I/K` of the parameters (the I-th of K even ranges, from 0; the workers list the K servers in order in --center)")
	c.job = fs.String("job", "", "dsgd ps with --store: the job's `NAME` in the store's keys; a store that holds a live job of another name is refused (default: DSGD_JOB, else derived from the token)")
	c.store = fs.String("store", "", "asynchronous schemes: carry the weights through a Redis server, redis://[:PASSWORD@]HOST:PORT (SpeeDO); the parameter server needs the same (default: DSGD_STORE, which keeps a password out of the process list)")
}

// storeURL is --store, else DSGD_STORE.
func (c *centerFlags) storeURL() string {
	if *c.store != "" {
		return *c.store
	}
	return os.Getenv("DSGD_STORE")
}

// dialCenter connects a worker process to its center, retrying until the
// server answers or timeout passes (a launcher starts both at once).
func dialCenter(ctx context.Context, f *trainFlags, tr *train.Trainer, token string, workers int, timeout time.Duration) (center.Center, func(), error) {
	addr := *f.center.addr
	if addr == "" {
		return nil, nil, errors.New("--center: this scheme's workers need the address of their parameter server (dsgd ps) or shared buffer server (dsgd smb)")
	}
	deadline := time.Now().Add(timeout)
	for {
		c, closer, err := dialCenterOnce(ctx, f, tr, token, workers, timeout)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil || !isDialRefused(err) {
			return c, closer, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// isDialRefused reports whether err is a refused connection: the server
// is not listening yet.
func isDialRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func dialCenterOnce(ctx context.Context, f *trainFlags, tr *train.Trainer, token string, workers int, timeout time.Duration) (center.Center, func(), error) {
	addr := *f.center.addr
	if rest, ok := strings.CutPrefix(addr, "smb://"); ok {
		cl, err := smb.Dial(ctx, rest, smb.Config{Token: token, Timeout: timeout, NoShm: *f.shm == "off", Run: tr.JoinFields()})
		if err != nil {
			return nil, nil, fmt.Errorf("--center %s: %w", addr, err)
		}
		w := tr.Net().Params()
		// The worker claims its rank before it joins: the server refuses
		// a second live worker of that rank and another --workers.
		c, err := smb.NewClaimingCenter(cl, smb.CenterConfig{Workers: workers, N: len(w), Weights: w, Finish: tr.Finish(), MaxIter: tr.MaxIter(),
			MaxUpdateNorm: *f.maxUpdateNorm})
		if err != nil {
			cl.Close()
			return nil, nil, fmt.Errorf("--center %s: %w", addr, err)
		}
		return c, func() {
			// Worker 0 releases the buffers after its last read of W_g
			// (ShmCaffe III.B); the last worker to leave frees them.
			// Best effort: the run's results are already out.
			if tr.GroupRank() == 0 {
				rctx, cancel := context.WithTimeout(context.Background(), timeout)
				c.Release(rctx)
				cancel()
			}
			cl.Close()
		}, nil
	}
	cfg := ps.ClientConfig{Token: token, Timeout: timeout, Workers: workers, Run: tr.JoinFields()}
	var st *redisstore.Store
	if url := f.center.storeURL(); url != "" {
		var err error
		if st, err = redisstore.Open(ctx, url, redisstore.Config{Timeout: timeout}); err != nil {
			return nil, nil, fmt.Errorf("--store: %w", err)
		}
		cfg.Store = st
	}
	c, err := ps.DialSharded(ctx, strings.Split(addr, ","), cfg)
	if err != nil {
		if st != nil {
			st.Close()
		}
		return nil, nil, fmt.Errorf("--center %s: %w", addr, err)
	}
	if c.N() != len(tr.Net().Params()) {
		c.Close()
		return nil, nil, fmt.Errorf("--center %s serves %d parameters, this model has %d: the server runs another model", addr, c.N(), len(tr.Net().Params()))
	}
	return c, func() {
		c.Close()
		if st != nil {
			st.Close()
		}
	}, nil
}

// serveCenter runs the parameter server of an asynchronous scheme: the
// center made from the run's start (its initial weights), served until
// every worker has finished or ctx ends.
func serveCenter(ctx context.Context, f *trainFlags, start *train.Start, listen, token string, stdout io.Writer, reg *prometheus.Registry) error {
	lo, hi := 0, len(start.Net().Params())
	if *f.center.shard != "" {
		var i, k int
		if _, err := fmt.Sscanf(*f.center.shard, "%d/%d", &i, &k); err != nil || k < 1 || i < 0 || i >= k || k > hi {
			return fmt.Errorf("--shard %q: want I/K with 0 <= I < K <= %d (the parameter count)", *f.center.shard, hi)
		}
		b := ps.EvenBounds(hi, k)
		lo, hi = b[i], b[i+1]
	}
	local, err := start.NewCenterRange(lo, hi)
	if err != nil {
		return err
	}
	if local == nil {
		return fmt.Errorf("scheme %s has no center to serve", *f.scheme)
	}
	if reg != nil {
		registerCenter(reg, local.Stats)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-local.Finished():
			time.Sleep(200 * time.Millisecond) // let the last answers go out
			cancel()
		case <-ctx.Done():
		}
	}()
	if url := f.center.storeURL(); url != "" {
		st, err := redisstore.Open(ctx, url, redisstore.Config{Timeout: *f.commTimeout})
		if err != nil {
			return fmt.Errorf("--store: %w", err)
		}
		defer st.Close()
		job := jobName(*f.center.job, token)
		host, _ := os.Hostname()
		lease, err := st.ClaimJob(ctx, job, fmt.Sprintf("dsgd ps on %s, %s, pid %d", host, listen, os.Getpid()), 0)
		if err != nil {
			return fmt.Errorf("--store: %w", err)
		}
		defer lease.Release(context.WithoutCancel(ctx))
		suffix := ":" + job
		if *f.center.shard != "" {
			suffix += ":" + strings.ReplaceAll(*f.center.shard, "/", "of")
		}
		if err := servePSStore(ctx, listen, token, local, start.CenterWorkers(), start.JoinFields(), *f.commTimeout, st, suffix, stdout, reg); err != nil {
			return err
		}
	} else if err := servePS(ctx, listen, token, local, start.CenterWorkers(), start.JoinFields(), *f.commTimeout, 0, stdout, reg); err != nil {
		return err
	}
	st := local.Stats()
	fmt.Fprintf(stdout, "ps: done: %d pulls, %d pushes, %d elastic exchanges, %d rounds, %d dropped, %d waits%s\n", st.Pulls, st.Pushes, st.Exchanges, st.Rounds, st.Dropped, st.Waits, staleText(st))
	return nil
}

// servePSStore is servePS with the weights carried through a blob store.
// suffix, appended to every key, carries the job's name (and the shard's).
func servePSStore(ctx context.Context, addr, token string, c *center.Local, workers int, run string, timeout time.Duration, st ps.BlobStore, suffix string, stdout io.Writer, reg *prometheus.Registry) error {
	srv, err := ps.Listen(addr, c, ps.ServerConfig{Token: token, Timeout: timeout, Store: st, Workers: workers, Run: run, Silence: psSilence(timeout), KeySuffix: suffix,
		ErrorLog: func(err error) { fmt.Fprintf(stdout, "ps: %v\n", err) }})
	if err != nil {
		return err
	}
	if reg != nil {
		registerServer(reg, srv)
	}
	fmt.Fprintf(stdout, "ps: serving %d parameters on %s, weights through %s\n", srv.N(), srv.Addr(), "redis")
	defer printStaleness(stdout, srv.Staleness)
	return srv.Serve(ctx)
}

// runSMB runs ShmCaffe's shared buffer server, or with --bench measures
// its aggregate read/write bandwidth on loopback beside memcpy.
func runSMB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("smb", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:7078", "`HOST:PORT` to serve on (loopback unless told otherwise)")
	token := fs.String("token", "", tokenUsage)
	tokenFile := fs.String("token-file", "", tokenFileUsage)
	timeout := fs.Duration("comm-timeout", time.Minute, "deadline of every read and write")
	bench := fs.Bool("bench", false, "measure aggregate read/write bandwidth for --clients clients instead of serving")
	clients := fs.String("clients", "2,4,8,16", "--bench: client counts")
	size := fs.String("bytes", "64MiB", "--bench: each client's buffer")
	shmMode := fs.String("shm", "on", smbShmUsage)
	workers := fs.Int("workers", 0, "the job's worker count: a worker started with another --workers is refused (default: the first worker's)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *shmMode != "on" && *shmMode != "off" {
		fmt.Fprintf(stderr, "dsgd smb: --shm %q: want on or off\n", *shmMode)
		return errUsage
	}
	noShm := *shmMode == "off"
	if *bench {
		ks, err := parseIntList(*clients, 1)
		if err != nil {
			fmt.Fprintf(stderr, "dsgd smb: --clients: %v\n", err)
			return errUsage
		}
		b, err := parseByteSize(*size)
		if err != nil {
			fmt.Fprintf(stderr, "dsgd smb: --bytes: %v\n", err)
			return errUsage
		}
		return benchSMB(ctx, ks, b, noShm, stdout)
	}
	tok, err := resolveToken(*token, *tokenFile, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "dsgd smb: %v\n", err)
		return errUsage
	}
	if *workers < 0 {
		fmt.Fprintf(stderr, "dsgd smb: --workers %d: want a count > 0 (or 0: the first worker's)\n", *workers)
		return errUsage
	}
	return serveSMB(ctx, *listen, tok, *timeout, 0, *workers, noShm, stdout)
}

// jobName is the name of the job in a blob store's keys: --job, else
// DSGD_JOB, else one derived from the job's token (the launcher makes a
// random token per job; processes of one job share it).
func jobName(flag, token string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("DSGD_JOB"); env != "" {
		return env
	}
	sum := sha256.Sum256([]byte("dsgd job\x00" + token))
	return "t" + hex.EncodeToString(sum[:6])
}

// staleText is ", update staleness mean M (max X)" for a center that took
// updates, else "".
func staleText(st center.Stats) string {
	if st.StaleN == 0 {
		return ""
	}
	return fmt.Sprintf(", update staleness mean %.2f (max %d) center updates between a worker's read and its update", st.MeanStale(), st.MaxStale)
}
