package main

import (
	"fmt"
	"strings"

	"dsgd/protocol/scheme"
	"dsgd/training/job"
	"dsgd/training/train"
)

// exactPlan decides --reduce and --atom: whether the run sums gradients
// exactly (train.Config.Exact) and, if so, the atom its loaders read per
// pass and the passes per iteration (cfg.IterSize, times the solver's
// iter_size). It sets the header's note.
func (f *trainFlags) exactPlan(j *job.Job, cfg *train.Config) error {
	if _, err := scheme.Lookup(cfg.Scheme); err != nil {
		return err
	}
	capable := train.ExactCapable(*cfg)
	// A resumed run's loaders skip what the iterations before read.
	j.TrainPasses = max(cfg.IterSize, 1)
	switch *f.reduce {
	case "fast":
		if capable {
			f.reduceNote = "dsgd: --reduce fast: float32 gradient sums, in the order the reduction takes: the weights' last bits depend on the worker count\n"
		}
		return nil
	case "auto":
		if !capable {
			return nil
		}
	case "exact":
		if !capable {
			return fmt.Errorf("--reduce exact: %s does not promise seq's numbers (exact sums are for seq, sync-ps, sync-tree, sync-ring, overlap, and local-sgd with --interval 1 and an SGD or Nesterov solver without clip_gradients)", cfg.Scheme)
		}
	default:
		return fmt.Errorf("--reduce %q: choose exact, fast or auto", *f.reduce)
	}
	if f.elastic.on() {
		// An elastic group's global batch changes with its size, so no
		// run at another size has its bits to keep; and the atoms'
		// plan is fixed at the start.
		if *f.reduce == "exact" {
			return fmt.Errorf("--reduce exact with --elastic %s: the global batch changes with the group's size, so there are no fixed bits to keep; use --reduce fast", *f.elastic.bounds)
		}
		f.reduceNote = "dsgd: --elastic: float32 gradient sums (--reduce fast); the global batch is each worker's batch times the group's size of the moment\n"
		return nil
	}
	if *f.compress != "none" {
		if *f.reduce == "exact" {
			return fmt.Errorf("--reduce exact with --compress %s: the exact sums' digits do not survive %s; use --reduce fast", *f.compress, *f.compress)
		}
		f.reduceNote = fmt.Sprintf("dsgd: --compress %s changes what travels: float32 gradient sums (--reduce fast), whose last bits depend on the worker count\n", *f.compress)
		return nil
	}
	cfg.Exact = true
	iterSize := max(cfg.IterSize, 1)
	b, why := j.TrainBatch()
	if c := train.BatchCoupled(j.Train.Spec); len(c) > 0 && why == "" {
		why = strings.Join(c, "; ")
	}
	atom := b
	switch {
	case *f.atom < 0:
		return fmt.Errorf("--atom %d is negative", *f.atom)
	case *f.atom > 0 && why != "":
		return fmt.Errorf("--atom %d: the batch cannot be cut into atoms: %s", *f.atom, why)
	case *f.atom > 0 && b%*f.atom != 0:
		return fmt.Errorf("--atom %d does not divide each worker's batch of %d images", *f.atom, b)
	case *f.atom > 0:
		atom = *f.atom
	case why == "":
		atom = train.DefaultAtom(b*cfg.Workers, b)
	}
	passes := 1
	if atom > 0 && b > 0 {
		passes = b / atom
	}
	if atoms := passes * cfg.Workers * iterSize; atoms > 4096 {
		return fmt.Errorf("--reduce exact: %d atoms per iteration, more than the 4096 an exact sum holds; raise --atom", atoms)
	}
	cfg.IterSize = iterSize * passes
	j.Atom, j.TrainPasses = 0, cfg.IterSize
	if passes > 1 {
		j.Atom = atom
	}
	global := b * cfg.Workers
	switch {
	case why != "":
		f.reduceNote = fmt.Sprintf("dsgd: exact gradient sums (--reduce exact), each worker's batch one atom: %s, so the bits depend on the worker count\n", why)
	default:
		f.reduceNote = fmt.Sprintf("dsgd: exact gradient sums (--reduce exact): %d atoms of %d images per iteration, the same bits with any worker count that divides %d (--reduce fast: float32 sums, faster)\n", global/atom*iterSize, atom, global/atom)
	}
	if cfg.Scheme == "local-sgd" {
		f.reduceNote += "dsgd: local-sgd averaging every iteration with a solver linear in the gradient averages the gradients before the update: the same mean weights as averaging them after, and seq's bits (--interval 2 or more averages the weights)\n"
	}
	return nil
}
