package main

import (
	"fmt"
	"slices"
	"strings"

	"dsgd/comm/collective"
	"dsgd/comm/compress"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// validate checks the model flags' values before any work is done.
func (m *modelFlags) validate() error {
	switch {
	case m.threads < 1:
		return fmt.Errorf("--threads must be at least 1, got %d", m.threads)
	case m.batch < 0:
		return fmt.Errorf("--batch must not be negative, got %d", m.batch)
	case m.batch > maxBatch:
		return fmt.Errorf("--batch %d is beyond %d images a batch", m.batch, maxBatch)
	}
	return nil
}

// maxBatch bounds --batch: beyond it a batch's input alone would not fit
// in any machine's memory for the smallest images.
const maxBatch = 1 << 24

// validate checks every training flag's value before any work is done
// (data loaded, nets built, processes started), so that a typo fails in
// a moment with the flag's name.
func (f *trainFlags) validate() error {
	if err := f.m.validate(); err != nil {
		return err
	}
	nonNeg := []struct {
		name string
		v    int
	}{
		{"iters", *f.iters}, {"test-iter", *f.testIter}, {"workers", *f.workers}, {"warmup", *f.warmup},
		{"bucket", max(*f.bucketKiB, 0)}, {"staleness", *f.staleness}, {"groups", *f.groups},
	}
	for _, c := range nonNeg {
		if c.v < 0 {
			return fmt.Errorf("--%s must not be negative, got %d", c.name, c.v)
		}
	}
	switch {
	case *f.testInterval < -1:
		return fmt.Errorf("--test-interval must not be negative, got %d", *f.testInterval)
	case *f.display < -1:
		return fmt.Errorf("--display must not be negative, got %d", *f.display)
	case *f.interval < 1:
		return fmt.Errorf("--interval must be at least 1, got %d", *f.interval)
	case *f.timeBudget < 0:
		return fmt.Errorf("--time-budget must not be negative, got %v", *f.timeBudget)
	case *f.commTimeout <= 0:
		return fmt.Errorf("--comm-timeout must be positive, got %v", *f.commTimeout)
	case *f.roundDeadline < 0:
		return fmt.Errorf("--round-deadline must not be negative, got %v", *f.roundDeadline)
	case *f.maxUpdateNorm < 0:
		return fmt.Errorf("--max-update-norm must not be negative, got %g", *f.maxUpdateNorm)
	case *f.momentum < 0 && *f.momentum != -1:
		return fmt.Errorf("--momentum must not be negative, got %g", *f.momentum)
	case *f.variant < 1 || *f.variant > 3:
		return fmt.Errorf("--variant must be 1, 2 or 3, got %d", *f.variant)
	}
	if err := (scheme.Options{Alpha: *f.alpha, Rho: *f.rho}).Check(); err != nil {
		return asFlags(err, trainFlagNames)
	}
	if *f.scheme != "" && !slices.Contains(scheme.Names(), *f.scheme) {
		return fmt.Errorf("--scheme %q: unknown; choose one of %s", *f.scheme, strings.Join(scheme.Names(), ", "))
	}
	if _, err := collective.ParseAlgorithm(*f.algo); err != nil && *f.algo != allreduceMPI {
		return fmt.Errorf("--allreduce: %v", err)
	}
	if _, err := center.ParseFinish(*f.finish); err != nil {
		return fmt.Errorf("--finish: %v", err)
	}
	if _, err := compress.Parse(*f.compress); err != nil {
		return fmt.Errorf("--compress: %v", err)
	}
	switch *f.lrScale {
	case "none", "linear", "inverse":
	default:
		return fmt.Errorf("--lr-scale %q: choose none, linear or inverse", *f.lrScale)
	}
	switch *f.transport {
	case "inproc", "tcp", "mpi":
	default:
		return fmt.Errorf("--transport %q: choose inproc, tcp or mpi (dsgd worker under mpirun or srun)", *f.transport)
	}
	if *f.straggle != "" {
		if _, err := parseStraggle(*f.straggle, max(*f.workers, 1<<30)); err != nil {
			return err
		}
	}
	if *f.bucketKiB < -1 {
		return fmt.Errorf("--bucket must not be negative, got %d", *f.bucketKiB)
	}
	switch *f.reduce {
	case "auto", "exact", "fast":
	default:
		return fmt.Errorf("--reduce %q: choose exact, fast or auto", *f.reduce)
	}
	if *f.atom < 0 {
		return fmt.Errorf("--atom must not be negative, got %d", *f.atom)
	}
	// --store carries a parameter server's weights; a scheme without one
	// would ignore it.
	if *f.center.store != "" {
		name := f.schemeName()
		in, _ := scheme.Lookup(name)
		switch {
		case in.Center == scheme.NoCenter:
			return fmt.Errorf("--store: %s moves its gradients and weights over --transport between its ranks, not through a center that Redis could carry (SpeeDO 3.1 also put sync SGD's weights in Redis; dsgd does not); --store is for %s", name, strings.Join(storeSchemes(), ", "))
		case in.SharedBuffers:
			return fmt.Errorf("--store: %s keeps its global weights in dsgd smb's shared buffers, not in a parameter server; --store is for %s", name, strings.Join(storeSchemes(), ", "))
		}
	}
	return nil
}

// storeSchemes lists the schemes whose parameter server --store serves:
// a center over dsgd ps.
func storeSchemes() []string {
	var out []string
	for _, n := range scheme.Names() {
		if in, _ := scheme.Lookup(n); in.Center != scheme.NoCenter && !in.SharedBuffers {
			out = append(out, n)
		}
	}
	return out
}
