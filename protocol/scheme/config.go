package scheme

import (
	"fmt"
	"strings"
)

// Config selects and parameterises a scheme.
type Config struct {
	// Name is the scheme, one of the catalogue's (Names).
	Name string
	// Workers is the number of worker ranks (1 for seq).
	Workers int
	// StartIter and MaxIter bound the iterations: a run does
	// StartIter..MaxIter-1 (StartIter is non-zero after a resume).
	StartIter, MaxIter int
	// Pack sends all layers as one contiguous message (SC17 5.2); without
	// it every parameter block travels as its own message.
	Pack bool
	// Layout is the model's parameter layout.
	Layout Layout
	// Bucket is, for overlap, the number of gradient values gathered from
	// consecutive layers before one allreduce (or accumulate) starts, as
	// PyTorch DDP's buckets; 0 sends every parameter block as soon as it
	// is final.
	Bucket int
	// Accumulate makes overlap TRL/Caffe's (Alg. 5–7): each worker adds
	// its layer gradients into one shared accumulator as backward
	// finishes them and copies the sum back, instead of allreducing. The
	// ranks must share memory (one process); without it overlap
	// allreduces each bucket among the workers.
	Accumulate bool
	// GradWidth is how many values the Grads buffer holds per parameter:
	// 0 or 1 for float32 gradients; more (tensor/exact.Limbs) when the
	// synchronous schemes carry exact sums as digits (issue 27), which
	// every reduction only adds: Grads ranges scale by it, and no Scale is
	// emitted, the driver's Update decoding and averaging the sum.
	GradWidth int
	// AverageGrads makes local-sgd with an averaging period of 1 average
	// the gradients before the update instead of the weights after it:
	// for a solver whose step is linear in the gradient (SGD, Nesterov,
	// without clip_gradients) the mean of the workers' weights is the
	// same either way (each worker's momentum differs, their mean follows
	// seq's), and the gradients' mean can be an exact sum (GradWidth), so
	// local-sgd with H = 1 gives seq's bits like the other synchronous
	// schemes. The driver sets it only when that holds.
	AverageGrads bool

	// Interval is how many iterations a worker of an asynchronous scheme
	// runs between exchanges with the center: SpeeDO's S, ShmCaffe's
	// update_interval, EASGD's tau (0 counts as 1), and local-sgd's
	// averaging period H.
	Interval int
	// Staleness is ssp's bound s: a worker more than s iterations ahead of
	// the slowest waits.
	Staleness int
	// Alpha is the elastic moving rate of the EASGD family (SC17's η·ρ,
	// ShmCaffe's moving_rate).
	Alpha float32
	// OuterMomentum is the Nesterov momentum of an Outer scheme's outer
	// optimizer (diloco's; the paper's is DiLoCoOuterMomentum), in [0, 1).
	OuterMomentum float32
	// Fragments is streaming-diloco's P: the parameter blocks split into
	// P contiguous groups of about equal size, synchronised at staggered
	// steps (0 counts as 1).
	Fragments int
	// Overlap is streaming-diloco's τ: a fragment's averaged outer step
	// lands τ inner steps after its pseudo-gradient is sent (0: at once).
	Overlap int
	// Mix is streaming-diloco's mixing factor: with Overlap > 0 a
	// fragment's weights become Mix·local + (1 − Mix)·global when its
	// outer step lands (with Overlap 0 the global copy replaces them).
	// 0 is a valid factor (the global copy); the command's default is
	// StreamingMix.
	Mix float32
	// OuterBits is the precision streaming-diloco's pseudo-gradients
	// travel in: 32, 16, 8 or 4 (0 counts as 32; see PackQuantized).
	OuterBits int
	// Variant is sync-easgd's implementation (SC17 6.1): 1 keeps the
	// center on a separate master rank, 2 on worker 0, 3 as 2 with the
	// exchange overlapped with the next forward and backward.
	Variant int
	// Groups is hybrid's number of synchronous groups (Workers must be a
	// multiple); their roots are the center's workers.
	Groups int
	// Aligned makes the workers of an asynchronous scheme run until the
	// center's finish rule stops them (ShmCaffe III.E), instead of each
	// stopping after MaxIter.
	Aligned bool
	// Broadcast starts every rank of a scheme whose ranks talk to each
	// other with rank 0's weights (TRL Alg. 5 line 2), for ranks that
	// built their models apart. The center schemes' workers start from
	// the center instead.
	Broadcast bool
}

// DefaultName is Config.Name when none is given: sync-tree for several
// workers, seq for one.
func DefaultName(workers int) string {
	if workers > 1 {
		return "sync-tree"
	}
	return "seq"
}

// DefaultBucket is Config.Bucket when none is given, in float32
// values: across processes (multiProcess) PyTorch DDP's 1 MiB buckets;
// in one process 0, every parameter block handed off as soon as it is
// final (TRL's per-layer hand-off).
func DefaultBucket(multiProcess bool) int {
	if multiProcess {
		return 1024 << 10 / 4
	}
	return 0
}

// Ranks is the number of ranks a scheme with this config runs on: the
// workers, plus the parameter server for sync-ps and the master of
// sync-easgd's variant 1.
func (c Config) Ranks() int {
	if in := c.info(); in.Servers != nil {
		return c.Workers + in.Servers(c)
	}
	return c.Workers
}

// UsesCenter reports whether the scheme's workers talk to a center
// (package center), and how many of them do: every worker, or for hybrid
// each group's root.
func (c Config) UsesCenter() (bool, int) {
	switch c.info().Center {
	case EveryWorker:
		return true, c.Workers
	case GroupRoots:
		return true, c.Groups
	}
	return false, 0
}

// CenterOnly reports whether the scheme's workers talk only to a center,
// never to each other (every center scheme but hybrid, whose groups
// also reduce among themselves).
func (c Config) CenterOnly() bool { return c.info().Center == EveryWorker }

// CenterID is rank r's worker id at the center: its rank, or for a
// scheme whose group roots talk to the center (hybrid) its group.
func (c Config) CenterID(r int) int {
	if c.info().Center == GroupRoots && c.Groups > 0 {
		return r / (c.Workers / c.Groups)
	}
	return r
}

// ClockedReads reports whether the scheme's center must serve pulls as of
// the global clock (center.Config.ClockedReads): ssp with staleness 0,
// which is BSP whatever the timing.
func (c Config) ClockedReads() bool { return c.info().Staleness && c.Staleness == 0 }

// Elastic reports whether the scheme uses the elastic moving rate Alpha.
func (c Config) Elastic() bool { return c.info().Elastic }

// Validate checks the config.
func (c Config) Validate() error {
	in, err := Lookup(c.Name)
	if err != nil {
		return err
	}
	switch {
	case c.Workers < 1:
		return fmt.Errorf("scheme: %s needs at least 1 worker, got %d", c.Name, c.Workers)
	case c.MaxIter < c.StartIter || c.StartIter < 0:
		return fmt.Errorf("scheme: iterations %d..%d are empty or negative", c.StartIter, c.MaxIter)
	case c.Layout.N <= 0:
		return fmt.Errorf("scheme: the model has no parameters")
	case c.Interval < 0:
		return fmt.Errorf("scheme: interval %d is negative", c.Interval)
	case in.Outer && (c.OuterMomentum < 0 || c.OuterMomentum >= 1):
		return fmt.Errorf("scheme: %s needs an outer momentum in [0,1), got %g", c.Name, c.OuterMomentum)
	case in.Outer && (c.Alpha < 0 || c.Alpha > 2):
		return fmt.Errorf("scheme: %s needs an outer learning rate alpha in (0,2] (0 for the default %g), got %g", c.Name, DiLoCoOuterLR, c.Alpha)
	case in.Elastic && (c.Alpha < 0 || c.Alpha >= 1):
		return fmt.Errorf("scheme: %s needs a moving rate alpha in [0,1), got %g", c.Name, c.Alpha)
	case c.AverageGrads && (!in.AveragesGrads || c.Interval > 1):
		return fmt.Errorf("scheme: averaging the gradients is %s's with an averaging period of 1, not %s with interval %d", strings.Join(namesWhere(func(in Info) bool { return in.AveragesGrads }), ", "), c.Name, c.Interval)
	case c.width() > 1 && !in.Exact && !c.AverageGrads:
		return fmt.Errorf("scheme: %s does not reduce gradients by sums alone, so it cannot carry exact sums (only %s do)", c.Name, strings.Join(namesWhere(func(in Info) bool { return in.Exact }), ", "))
	case c.Accumulate && !in.Accumulator:
		return fmt.Errorf("scheme: only %s accumulates into a shared accumulator, not %s", strings.Join(namesWhere(func(in Info) bool { return in.Accumulator }), ", "), c.Name)
	case c.Aligned && !in.Aligned:
		return fmt.Errorf("scheme: %s does not support aligned termination (Config.Aligned): only schemes whose every worker clocks at a center do (%s); the synchronous schemes and weedout's rounds end their workers together by construction", c.Name, strings.Join(namesWhere(func(in Info) bool { return in.Aligned }), ", "))
	}
	if in.check != nil {
		return in.check(c)
	}
	return nil
}

// New returns one Rank per rank (Config.Ranks of them), rank r at index r.
func New(c Config) ([]Rank, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	in := c.info()
	ranks := in.newRanks(c, c.Ranks())
	if c.Broadcast && !c.CenterOnly() && !in.SharedWeights && len(ranks) > 1 {
		for r := range ranks {
			ranks[r] = &initialBroadcast{inner: ranks[r], n: c.Layout.N}
		}
	}
	return ranks, nil
}

// messages returns the ranges one gradient or weight transfer is split
// into: the whole buffer when packed, else one per block, in backward
// order (the order backward finishes them).
func (c Config) messages(buf Buffer) []Range {
	w := 1
	if buf == Grads {
		w = c.width()
	}
	if c.Pack || len(c.Layout.Blocks) == 0 {
		return []Range{{buf, 0, w * c.Layout.N}}
	}
	out := make([]Range, 0, len(c.Layout.Blocks))
	for i := len(c.Layout.Blocks) - 1; i >= 0; i-- {
		b := c.Layout.Blocks[i]
		if b.Hi > b.Lo {
			out = append(out, Range{buf, w * b.Lo, w * b.Hi})
		}
	}
	return out
}

// width is GradWidth, at least 1.
func (c Config) width() int { return max(c.GradWidth, 1) }
