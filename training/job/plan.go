package job

import (
	"fmt"
	"strings"

	"dsgd/comm/compress"
	"dsgd/protocol/scheme"
	"dsgd/training/train"
)

// RefusedError is a refusal of the settings a run was given (a
// compressor or sums it cannot take), as opposed to a failure: the
// command's usage.
type RefusedError struct{ Err error }

// Error is the refusal's.
func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap is the refusal.
func (e *RefusedError) Unwrap() error { return e.Err }

// Plan makes a resumed run's data continue where its snapshot stopped
// (ResumeAt), then sets cfg's compressor (PlanCompress, with warmup) and
// sums (PlanSums), refusing a compressor the run cannot take
// (train.CompressRefusal) before any data is opened. A refusal is a
// *RefusedError; note is PlanSums'.
func (j *Job) Plan(cfg *train.Config, s Sums, warmup int) (note string, err error) {
	if cfg.Resume != "" {
		if err := j.ResumeAt(cfg.Resume); err != nil {
			return "", err
		}
	}
	if err := PlanCompress(cfg, s.Compress, warmup); err != nil {
		return "", &RefusedError{err}
	}
	if note, err = j.PlanSums(cfg, s); err != nil {
		return "", &RefusedError{err}
	}
	if err := train.CompressRefusal(*cfg); err != nil {
		return "", &RefusedError{err}
	}
	return note, nil
}

// PlanCompress sets cfg's gradient compressor from spec (bf16,
// powersgd:R, topk:F, sign; none and fp16, the tcp wire's encoding, set
// none) and its warm-up of plain iterations: warmup, or with -1 10% of
// the run's iterations (PyTorch's hook starts PowerSGD after
// start_powerSGD_iter plain steps and suggests about that share).
func PlanCompress(cfg *train.Config, spec string, warmup int) error {
	s, err := compress.Parse(spec)
	if err != nil {
		return fmt.Errorf("Config.Compress: %v", err)
	}
	switch {
	case warmup < -1:
		return fmt.Errorf("Config.CompressWarmup %d is negative", warmup)
	case warmup >= 0 && !s.Gradient():
		if warmup > 0 {
			return fmt.Errorf("Config.CompressWarmup %d with Config.Compress %s: only bf16, powersgd:R, topk:F and sign have a warm-up", warmup, s)
		}
	case warmup == -1:
		warmup = cfg.MaxIter / 10
	}
	if !s.Gradient() {
		return nil
	}
	cfg.Compress, cfg.CompressWarmup = s, warmup
	return nil
}

// Sums says how a run asks its gradients to be summed: the command's
// --reduce, --atom, and what rules exact sums out.
type Sums struct {
	// Reduce is exact, fast or auto (exact where the scheme promises
	// seq's numbers).
	Reduce string
	// Atom is the images per atom; 0 chooses.
	Atom int
	// Elastic is the elastic group's bounds ("" for none); Compress the
	// compressor ("none" for none, fp16 included).
	Elastic, Compress string
}

// PlanSums decides whether the run sums gradients exactly
// (train.Config.Exact) and, if so, the atom its loaders read per pass
// and the passes per iteration (cfg.IterSize, times the solver's
// iter_size). note is the header's line on it, naming Config fields
// (and Sums.Atom) as the errors do.
func (j *Job) PlanSums(cfg *train.Config, s Sums) (note string, err error) {
	if _, err := scheme.Lookup(cfg.Name); err != nil {
		return "", err
	}
	capable := train.ExactCapable(*cfg)
	// A resumed run's loaders skip what the iterations before read.
	j.TrainPasses = max(cfg.IterSize, 1)
	switch s.Reduce {
	case "fast":
		if capable {
			note = "dsgd: Config.Exact false: float32 gradient sums, in the order the reduction takes: the weights' last bits depend on the worker count\n"
		}
		return note, nil
	case "auto":
		if !capable {
			return "", nil
		}
	case "exact":
		if !capable {
			var exact, avg []string
			for _, in := range scheme.Schemes() {
				if in.Exact {
					exact = append(exact, in.Name)
				} else if in.AveragesGrads {
					avg = append(avg, in.Name)
				}
			}
			return "", fmt.Errorf("Config.Exact: %s does not promise seq's numbers (exact sums are for %s, and %s with Config.Interval 1 and an SGD or Nesterov solver without clip_gradients)", cfg.Name, strings.Join(exact, ", "), strings.Join(avg, ", "))
		}
	default:
		return "", fmt.Errorf("Sums.Reduce %q: choose exact, fast or auto", s.Reduce)
	}
	if len(cfg.GPUs) > 0 {
		if s.Reduce == "exact" {
			return "", fmt.Errorf("Config.Exact with Config.GPUs: the exact sums' replicas run on the CPU only; use Config.Exact false")
		}
		return "dsgd: Config.GPUs: float32 gradient sums (Config.Exact false), whose last bits depend on the worker count\n", nil
	}
	if s.Elastic != "" {
		// An elastic group's global batch changes with its size, so no
		// run at another size has its bits to keep; and the atoms'
		// plan is fixed at the start.
		if s.Reduce == "exact" {
			return "", fmt.Errorf("Config.Exact with Config.Elastic %s: the global batch changes with the group's size, so there are no fixed bits to keep; use Config.Exact false", s.Elastic)
		}
		return "dsgd: Config.Elastic: float32 gradient sums (Config.Exact false); the global batch is each worker's batch times the group's size of the moment\n", nil
	}
	if s.Compress != "none" {
		if s.Reduce == "exact" {
			return "", fmt.Errorf("Config.Exact with Config.Compress %s: the exact sums' digits do not survive %s; use Config.Exact false", s.Compress, s.Compress)
		}
		return fmt.Sprintf("dsgd: Config.Compress %s changes what travels: float32 gradient sums (Config.Exact false), whose last bits depend on the worker count\n", s.Compress), nil
	}
	cfg.Exact = true
	iterSize := max(cfg.IterSize, 1)
	b, why := j.TrainBatch()
	if c := train.BatchCoupled(j.Train.Spec); len(c) > 0 && why == "" {
		why = strings.Join(c, "; ")
	}
	atom := b
	switch {
	case s.Atom < 0:
		return "", fmt.Errorf("Sums.Atom %d is negative", s.Atom)
	case s.Atom > 0 && why != "":
		return "", fmt.Errorf("Sums.Atom %d: the batch cannot be cut into atoms: %s", s.Atom, why)
	case s.Atom > 0 && b%s.Atom != 0:
		return "", fmt.Errorf("Sums.Atom %d does not divide each worker's batch of %d images", s.Atom, b)
	case s.Atom > 0:
		atom = s.Atom
	case why == "":
		atom = train.DefaultAtom(b*cfg.Workers, b)
	}
	passes := 1
	if atom > 0 && b > 0 {
		passes = b / atom
	}
	if atoms := passes * cfg.Workers * iterSize; atoms > 4096 {
		return "", fmt.Errorf("Config.Exact: %d atoms per iteration, more than the 4096 an exact sum holds; raise Sums.Atom", atoms)
	}
	cfg.IterSize = iterSize * passes
	j.Atom, j.TrainPasses = 0, cfg.IterSize
	if passes > 1 {
		j.Atom = atom
	}
	global := b * cfg.Workers
	switch {
	case why != "":
		note = fmt.Sprintf("dsgd: exact gradient sums (Config.Exact), each worker's batch one atom: %s, so the bits depend on the worker count\n", why)
	default:
		note = fmt.Sprintf("dsgd: exact gradient sums (Config.Exact): %d atoms of %d images per iteration, the same bits with any worker count that divides %d (Config.Exact false: float32 sums, faster)\n", global/atom*iterSize, atom, global/atom)
	}
	if cfg.Info().AveragesGrads {
		note += fmt.Sprintf("dsgd: %s averaging every iteration with a solver linear in the gradient averages the gradients before the update: the same mean weights as averaging them after, and seq's bits (Config.Interval 2 or more averages the weights)\n", cfg.Name)
	}
	return note, nil
}
