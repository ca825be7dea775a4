package train

import (
	"context"
	"fmt"
	"strings"

	"dsgd/transport"
)

// tagAgree is the tag of the run-configuration exchange; the collectives
// and the schemes use tags far below it.
const tagAgree uint32 = 0x7a9e0001

// runFields is what every rank of a multi-process group must agree on,
// as name=value pairs named as the command's flags: the random seed
// (initial weights, random layers, data order), the solver, the scheme
// and its settings, the batch and the iterations.
func (t *Trainer) runFields() [][2]string {
	c := t.cfg
	s := c.Solver
	f := func(name string, v any) [2]string { return [2]string{name, fmt.Sprint(v)} }
	return [][2]string{
		f("--seed", c.Seed),
		f("--scheme", c.Scheme),
		f("--workers", max(c.Workers, 1)),
		f("batch size", t.batch),
		f("--reduce", map[bool]string{true: "exact", false: "fast"}[c.Exact]),
		f("passes per iteration (iter_size x atoms)", max(c.IterSize, 1)),
		f("--iters (max_iter)", c.MaxIter),
		f("start iteration (--resume)", t.start),
		f("solver type", s.Type),
		f("base_lr", s.BaseLR),
		f("momentum", s.Momentum),
		f("weight_decay", s.WeightDecay),
		f("lr_policy", fmt.Sprintf("%s gamma %g power %g stepsize %d stepvalue %v", s.LRPolicy, s.Gamma, s.Power, s.StepSize, s.StepValues)),
		f("--pack", c.Pack),
		f("--bucket", c.Bucket),
		f("--interval", c.Interval),
		f("--staleness", c.Staleness),
		f("--alpha", c.Alpha),
		f("--variant", c.Variant),
		f("--groups", c.Groups),
		f("--finish", c.Finish),
	}
}

// agree checks that this rank's run configuration is rank 0's: rank 0
// sends its fields to every other rank, which compares them with its own
// and fails naming the first field that differs. A rank that fails
// aborts its endpoint with the reason, so rank 0 learns of it too.
func (t *Trainer) agree(ctx context.Context, ep transport.Endpoint) error {
	mine := t.runFields()
	var b strings.Builder
	for _, kv := range mine {
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(kv[1])
		b.WriteByte('\n')
	}
	if ep.Rank() == 0 {
		for r := 1; r < ep.Size(); r++ {
			if err := ep.SendBytes(ctx, r, tagAgree, []byte(b.String())); err != nil {
				return fmt.Errorf("train: sending the run configuration to rank %d: %w", r, err)
			}
		}
		return nil
	}
	msg, err := ep.RecvBytes(ctx, 0, tagAgree, 1<<16)
	if err != nil {
		return fmt.Errorf("train: receiving rank 0's run configuration: %w", err)
	}
	theirs := strings.Split(strings.TrimSuffix(string(msg), "\n"), "\n")
	if len(theirs) != len(mine) {
		return fmt.Errorf("train: rank 0 sent %d run settings, this rank has %d: a different dsgd version?", len(theirs), len(mine))
	}
	for i, kv := range mine {
		want := kv[0] + "=" + kv[1]
		if theirs[i] != want {
			v := strings.TrimPrefix(theirs[i], kv[0]+"=")
			return fmt.Errorf("train: rank %d's %s is %s, rank 0's is %s: every rank must run the same configuration", ep.Rank(), kv[0], kv[1], v)
		}
	}
	return nil
}
