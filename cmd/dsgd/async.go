package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dsgd/internal/launcher"
	"dsgd/protocol/center"
	"dsgd/servers/centernet"
	"dsgd/servers/ps"
	"dsgd/servers/smb"
	"dsgd/training/job"
	"dsgd/training/prom"
	"dsgd/training/train"
)

// centerFlags say where a worker process of an asynchronous scheme finds
// its center.
type centerFlags struct {
	addr, store, shard, job *string
}

func (c *centerFlags) register(fs *flag.FlagSet, store *string) {
	c.store = store
	c.addr = fs.String("center", "", "asynchronous schemes in worker processes: the parameter server `HOST:PORT` (several, comma-separated, for a sharded one), or smb://HOST:PORT for the shared buffer server (seasgd)")
	c.shard = fs.String("shard", "", "dsgd ps: serve shard `I/K` of the parameters (the I-th of K even ranges, from 0; the workers list the K servers in order in --center)")
	c.job = fs.String("job", "", "dsgd ps with --store: the job's `NAME` in the store's keys; a store that holds a live job of another name is refused (default: DSGD_JOB, else derived from the token)")
	fs.StringVar(store, "store", "", "asynchronous schemes: carry the weights through a Redis server, redis://[:PASSWORD@]HOST:PORT (SpeeDO); the parameter server needs the same (default: DSGD_STORE, which keeps a password out of the process list)")
}

// storeURL is --store, else DSGD_STORE.
func (c *centerFlags) storeURL() string {
	if *c.store != "" {
		return *c.store
	}
	return os.Getenv("DSGD_STORE")
}

// dialCenter connects a worker process to its center (centernet.Dial).
func dialCenter(ctx context.Context, f *trainFlags, tr *train.Trainer, token string, workers int) (center.Center, func(), error) {
	return centernet.Dial(ctx, centernet.DialConfig{Addr: *f.center.addr, Token: token, Timeout: f.o.CommTimeout, NoShm: f.o.Shm == "off", Run: tr.JoinFields(),
		Workers: workers, Weights: tr.Net().Params(), Finish: tr.Finish(), MaxIter: tr.MaxIter(), MaxUpdateNorm: f.o.MaxUpdateNorm,
		Store: f.center.storeURL(), Releases: func() bool { return tr.GroupRank() == 0 }})
}

// serveCenter runs the parameter server of an asynchronous scheme
// (centernet.Serve): the center made from the run's start (its initial
// weights), served until every worker has finished or ctx ends.
func serveCenter(ctx context.Context, f *trainFlags, start *train.Start, listen, token string, stdout io.Writer, reg *prometheus.Registry) error {
	lo, hi, err := centernet.ShardRange(*f.center.shard, len(start.Net().Params()))
	if err != nil {
		return err
	}
	local, err := start.NewCenterRange(lo, hi)
	if err != nil {
		return err
	}
	if local == nil {
		return fmt.Errorf("scheme %s has no center to serve", f.o.Scheme)
	}
	cfg := centernet.ServeConfig{Listen: listen, Token: token, Timeout: f.o.CommTimeout, Center: local, Workers: start.CenterWorkers(), Run: start.JoinFields(),
		Store: f.center.storeURL(), Job: cmp.Or(*f.center.job, os.Getenv("DSGD_JOB")), Shard: *f.center.shard, Out: stdout}
	if reg != nil {
		prom.RegisterCenter(reg, local.Stats)
		cfg.OnServer = func(srv *ps.Server) { reg.MustRegister(srv.Collectors()...) }
	}
	if err := centernet.Serve(ctx, cfg); err != nil {
		return err
	}
	st := local.Stats()
	fmt.Fprintf(stdout, "ps: done: %d pulls, %d pushes, %d elastic exchanges, %d rounds, %d dropped, %d waits%s\n", st.Pulls, st.Pushes, st.Exchanges, st.Rounds, st.Dropped, st.Waits, job.StaleText(st))
	return nil
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
	usage := func(err error) error {
		fmt.Fprintf(stderr, "dsgd smb: %v\n", asFlags(err, trainFlagNames))
		return errUsage
	}
	if *shmMode != "on" && *shmMode != "off" {
		return usage(fmt.Errorf("--shm %q: want on or off", *shmMode))
	}
	noShm := *shmMode == "off"
	if *bench {
		ks, err := parseIntList(*clients, 1)
		if err != nil {
			return usage(fmt.Errorf("--clients: %v", err))
		}
		b, err := parseByteSize(*size)
		if err != nil {
			return usage(fmt.Errorf("--bytes: %v", err))
		}
		return benchSMB(ctx, ks, b, noShm, stdout)
	}
	tok, err := launcher.Secret{Token: *token, TokenFile: *tokenFile}.Resolve(os.Getenv)
	if err != nil {
		return usage(err)
	}
	if *workers < 0 {
		return usage(fmt.Errorf("--workers %d: want a count > 0 (or 0: the first worker's)", *workers))
	}
	return smb.Run(ctx, *listen, smb.Config{Token: tok, Timeout: *timeout, Workers: *workers}, smbMemLimit(), noShm, stdout)
}
