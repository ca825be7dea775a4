package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"dsgd/comm/elastic"
	"dsgd/internal/launcher"
	"dsgd/training/job"
)

// registerElastic adds --elastic MIN:MAX and the coordinator's address.
func registerElastic(fs *flag.FlagSet, bounds, coordinator *string) {
	fs.StringVar(bounds, "elastic", "", "`MIN:MAX`: a synchronous group (sync-ps, sync-ring, sync-tree, overlap, local-sgd, diloco; --transport tcp) that survives lost and added workers: a worker that dies is dropped within --comm-timeout and the others go on from the last iteration one of them completed; a worker started with --elastic-coordinator joins at the next iteration boundary; fewer than MIN ends the run")
	fs.StringVar(coordinator, "elastic-coordinator", "", "dsgd worker --elastic: `HOST:PORT` of the group's coordinator (the launcher's, which it prints): join the group there")
}

// runCoordinator serves an elastic group's coordinator for workers
// started by hand or by another launcher (mpirun, srun) on several hosts:
// dsgd elastic-coordinator --elastic 2:4 --workers 4 --listen 0.0.0.0:7078.
// It exits once the group has finished (every worker's connection ended),
// non-zero if the group could not go on.
func runCoordinator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("elastic-coordinator", flag.ContinueOnError)
	var bounds, coordinator string
	registerElastic(fs, &bounds, &coordinator)
	listen := fs.String("listen", "127.0.0.1:7078", "`HOST:PORT` to serve on (loopback unless told otherwise; beyond it a token is required)")
	workers := fs.Int("workers", 0, "the workers the first generation waits for (default: MAX)")
	server := fs.Bool("server", false, "the group has a parameter server rank (--scheme sync-ps)")
	timeout := fs.Duration("comm-timeout", time.Minute, "how long a re-forming group waits for a member that says nothing (as the workers' --comm-timeout)")
	token := fs.String("token", "", tokenUsage)
	tokenFile := fs.String("token-file", "", tokenFileUsage)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	usage := func(err error) error {
		fmt.Fprintf(stderr, "dsgd elastic-coordinator: %v\n", asFlags(err, trainFlagNames))
		return errUsage
	}
	if bounds == "" {
		return usage(errors.New("--elastic MIN:MAX is required"))
	}
	lo, hi, err := job.ElasticBounds(bounds)
	if err != nil {
		return usage(err)
	}
	tok, err := launcher.Secret{Token: *token, TokenFile: *tokenFile}.Resolve(os.Getenv)
	if err != nil {
		return usage(err)
	}
	want := cmp.Or(*workers, hi)
	c, err := elastic.Listen(*listen, elastic.Config{Min: lo, Max: hi, Want: want, Server: *server, Token: tok, Timeout: *timeout,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "dsgd: "+format+"\n", args...) }})
	if err != nil {
		return usage(fmt.Errorf("--listen %s: %v", *listen, err))
	}
	fmt.Fprintf(stdout, "dsgd: elastic coordinator on %s for %d:%d workers (the first generation waits for %d)\n", c.Addr(), lo, hi, want)
	return c.Run(ctx)
}
