package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"dsgd/comm/transport"
	"dsgd/comm/transport/mpi"
	"dsgd/comm/transport/tcp"
	"dsgd/internal/launcher"
	"dsgd/protocol/scheme"
	"dsgd/training/job"
	"dsgd/training/launch"
)

// groupFlags place a process in a multi-process group. Each may come from
// a flag or from the environment of a launcher (see resolve).
type groupFlags struct {
	rank, world int
	rendezvous  string
	token       string
	tokenFile   string
	listen      string
	// placed is where launcher.Resolve placed the process; auto is its
	// note on a rendezvous derived from the launcher's job id, in flags
	// (empty when given).
	placed launcher.Placement
	auto   string
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
	fs.StringVar(&g.listen, "listen", tcp.DefaultListen, "`HOST:PORT` for this rank's data connections (loopback unless told otherwise; 0.0.0.0:0 for multi-host)")
}

// resolve fills what the flags left unset from the environment
// (launcher.Resolve: a launcher's rank and world, MASTER_ADDR/MASTER_PORT,
// DSGD_RENDEZVOUS, a loopback rendezvous derived from the job id) and the
// token from DSGD_TOKEN or --token-file (the job's identity on a derived
// rendezvous when there is none).
func (g *groupFlags) resolve(getenv func(string) string) error {
	p, err := launcher.Resolve(launcher.Placement{Rank: g.rank, World: g.world, Rendezvous: g.rendezvous}, getenv)
	if err != nil {
		return asFlags(err, trainFlagNames)
	}
	g.rank, g.world, g.rendezvous, g.placed = p.Rank, p.World, p.Rendezvous, p
	g.auto = trainFlagNames.Replace(p.Derived)
	g.token, err = launcher.Secret{Token: g.token, TokenFile: g.tokenFile}.Resolve(getenv)
	if g.token == "" {
		g.token = p.JobToken()
	}
	return asFlags(err, trainFlagNames)
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
	// usage refuses the flags as the command's (dsgd worker, dsgd ps).
	usage := func(err error) error {
		fmt.Fprintf(stderr, "dsgd %s: %v\n", name, asFlags(err, trainFlagNames))
		return errUsage
	}
	// The launcher said what it restored; a rank restores the same.
	if err := restoreRun(fs, f.o.Resume, io.Discard); err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return usage(err)
	}
	if err := f.watchSignals(ctx, false); err != nil {
		return usage(err)
	}
	if name == "ps" && job.CenterOnly(f.o.Scheme, f.o.Workers) {
		p, listen, err := job.CenterPlacement(f.schemeGiven(), g.listen)
		if err != nil {
			return usage(err)
		}
		g.rank, g.world, g.listen, g.serve = p.Rank, p.World, listen, true
		tok, err := launcher.Secret{Token: g.token, TokenFile: g.tokenFile}.Resolve(os.Getenv)
		if err != nil {
			return usage(err)
		}
		g.token = tok
		return execute(ctx, &f, &g, stdout, stderr)
	}
	if f.o.Elastic != "" && f.o.ElasticCoordinator == "" {
		return usage(errors.New("--elastic needs --elastic-coordinator HOST:PORT, the group's coordinator (dsgd train --transport tcp --elastic prints it)"))
	}
	sc, p, err := job.RankDefaults(f.schemeGiven(), launcher.Placement{Rank: g.rank, World: g.world, Rendezvous: g.rendezvous}, f.o.Elastic != "", name == "ps")
	if err != nil {
		return usage(err)
	}
	f.o.Scheme, g.rank, g.world, g.rendezvous = sc.Name, p.Rank, p.World, p.Rendezvous
	if f.o.Transport == "mpi" || f.o.Allreduce == job.AllreduceMPI {
		if err := g.joinMPI(&f); err != nil {
			return usage(err)
		}
	} else if err := g.resolve(os.Getenv); err != nil {
		return usage(err)
	}
	if g.auto != "" && g.rank == 0 {
		fmt.Fprint(stdout, g.auto)
	}
	// The world size fixes the worker count.
	if sc, err = job.RankWorkers(f.schemeGiven(), g.world); err != nil {
		return usage(err)
	}
	f.o.Scheme, f.o.Workers = sc.Name, sc.Workers
	return job.FinishMPI(g.mpi, execute(ctx, &f, &g, stdout, stderr))
}

// schemeGiven is the scheme as the flags give it: Name "" and Workers 0
// when they say none.
func (f *trainFlags) schemeGiven() scheme.Config {
	return scheme.Config{Name: f.o.Scheme, Variant: f.o.Variant, Workers: f.o.Workers}
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

// launchRanks runs a --transport tcp job on this host (job.Launch): one child
// process per rank, joined over loopback TCP, with the center of a scheme
// that has one and, under --elastic, the group's coordinator. The
// children get the command's flags less --transport and --store (which
// they get through the environment, never the command line, which other
// users can read); the center does not take --metrics-listen, rank 0's.
func launchRanks(ctx context.Context, args []string, f *trainFlags, stdout, stderr io.Writer) error {
	base := stripFlag(stripFlag(args, "transport"), "store")
	err := job.Launch(ctx, f.options(), launch.Config{
		Args:       base,
		CenterArgs: stripFlag(base, "metrics-listen"),
		Store:      f.center.storeURL(),
		Token:      os.Getenv("DSGD_TOKEN"), // the user's: a worker they start later joins with it
		Grace:      graceFromEnv(stderr),
		Signal:     func() os.Signal { return signalOf(ctx) },
		Stdout:     stdout,
		Stderr:     stderr,
	})
	return asFlags(err, trainFlagNames)
}
