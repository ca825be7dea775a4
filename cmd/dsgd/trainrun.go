package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
	"dsgd/training/job"
	"dsgd/training/train"
)

// options are the run's settings the flags give: the train flags', the
// model flags' and whether --interval was given.
func (f *trainFlags) options() job.RunOptions {
	o := f.o
	o.Model, o.Threads, o.GPUs, o.TF32, o.GPUFastest = f.m.options(), f.m.threads, f.m.gpuIDs, f.m.tf32, f.m.fastest
	o.IntervalSet = flagGiven(f.fs, "interval", "update-interval")
	return o
}

// validate checks every training flag's value before any work is done
// (data loaded, nets built, processes started), so that a typo fails in
// a moment with the flag's name (RunOptions.Check).
func (f *trainFlags) validate() error {
	if err := f.m.validate(); err != nil {
		return err
	}
	return asFlags(f.options().Check(), trainFlagNames)
}

// execute runs the training job the flags describe (job.Train): every
// rank in this process (g nil), or rank g.rank of a multi-process group.
// Its errors name the flags; a refusal of them is printed as the
// command's and returns errUsage.
func execute(ctx context.Context, f *trainFlags, g *groupFlags, stdout, stderr io.Writer) error {
	o := f.options()
	streaming := scheme.Config{Name: o.SchemeName()}.Info().Streaming
	if err := f.streaming.apply(f.fs, streaming, &o.Fragments, &o.Overlap, &o.Mix, &o.OuterBits); err != nil {
		return refuse(stderr, err)
	}
	d := job.RunDeps{Stdout: stdout, Stderr: stderr, TTY: ownTerminal(stdout, os.Getenv), Names: trainFlagNames.Replace, Record: f.record,
		SnapshotRequested: f.snapshotAsked}
	if g != nil {
		d.Group = g.group(f, stdout)
	}
	res, err := job.Train(ctx, o, d)
	f.result = res
	if re, ok := errors.AsType[*job.RefusedError](err); ok {
		return refuse(stderr, asFlags(re.Err, trainFlagNames))
	}
	return asFlags(err, trainFlagNames)
}

// group is g's place in the run, how it joins its group, and the
// factories of the center's client (centernet's) and, for dsgd ps, its
// server.
func (g *groupFlags) group(f *trainFlags, stdout io.Writer) *job.Group {
	jg := &job.Group{Rank: g.rank, World: g.world, Listen: g.listen, Token: g.token, Rendezvous: g.rendezvous,
		Hint: g.placed.Hint(), MPI: g.mpi, Native: g.native,
		Center: func(ctx context.Context, tr *train.Trainer, workers int) (center.Center, func(), error) {
			return dialCenter(ctx, f, tr, g.token, workers)
		},
	}
	if g.serve {
		jg.Serve = func(ctx context.Context, st *train.Start, reg *prometheus.Registry) error {
			return serveCenter(ctx, f, st, g.listen, g.token, stdout, reg)
		}
	}
	return jg
}

// refuse prints err as the command's refusal of its flags and returns
// errUsage.
func refuse(stderr io.Writer, err error) error {
	fmt.Fprintf(stderr, "dsgd train: %v\n", err)
	return errUsage
}
