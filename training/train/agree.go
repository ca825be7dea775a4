package train

import (
	"context"
	"fmt"

	"dsgd/comm/transport"
	"dsgd/internal/runcfg"
	"dsgd/protocol/center"
)

// tagAgree is the tag of the run-configuration exchange; the collectives
// and the schemes use tags far below it.
const tagAgree uint32 = 0x7a9e0001

// startField and itersField name the start iteration and the iterations
// among the run's fields.
const (
	startField = "start iteration (--resume)"
	itersField = "--iters (max_iter)"
)

// runFields is what every rank of a multi-process group must agree on,
// as name=value pairs named as the command's flags: the random seed
// (initial weights, random layers, data order), the solver, the scheme
// and its settings, the batch and the iterations.
func (o *origin) runFields() runcfg.Fields {
	c := o.cfg
	s := c.Solver
	f := func(name string, v any) [2]string { return [2]string{name, fmt.Sprint(v)} }
	fields := runcfg.Fields{
		f("--seed", c.Seed),
		f("--scheme", c.Name),
		f("--workers", max(c.Workers, 1)),
		f("batch size", o.batch),
		f("--reduce", map[bool]string{true: "exact", false: "fast"}[c.Exact]),
		f("passes per iteration (iter_size x atoms)", max(c.IterSize, 1)),
		f(itersField, c.MaxIter),
		f(startField, o.start),
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
		f("--outer-momentum", c.OuterMomentum),
		f("--variant", c.Variant),
		f("--groups", c.Groups),
		f("--finish", c.Finish),
	}
	if c.Info().Streaming {
		// Only for it, so that the other schemes' fields (and older
		// snapshots' and servers' comparisons) stay as they were.
		fields = append(fields, f("--fragments", c.Fragments), f("--overlap", c.Overlap), f("--mix", c.Mix), f("--outer-bits", c.OuterBits))
	}
	return fields
}

// JoinFields is what a worker of a center scheme tells its parameter
// server when it joins (ps.ClientConfig.Run), and what the server checks
// it against (ps.ServerConfig.Run): the run's fields but the start
// iteration (a restarted worker rejoins from its own snapshot) and, when
// every worker runs its own count (--finish own), the iterations; and the
// net's parameter layout.
func (o *origin) JoinFields() string {
	var out runcfg.Fields
	for _, kv := range o.runFields() {
		// A worker may run iterations of its own (--iters) unless a
		// finish rule counts them against the center's.
		if kv[0] == startField || (kv[0] == itersField && o.cfg.Finish == center.FinishOwn) {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, [2]string{"net (its parameter layout)", fmt.Sprintf("%016x", o.LayoutHash())})
	return out.String()
}

// agree checks that this rank's run configuration is rank 0's: rank 0
// sends its fields to every other rank, which compares them with its own
// and fails naming the first field that differs. A rank that fails
// aborts its endpoint with the reason, so rank 0 learns of it too.
func (t *Trainer) agree(ctx context.Context, ep transport.Endpoint) error {
	mine := runcfg.Fields(t.runFields())
	if ep.Rank() == 0 {
		for r := 1; r < ep.Size(); r++ {
			if err := ep.SendBytes(ctx, r, tagAgree, []byte(mine.String())); err != nil {
				return fmt.Errorf("train: sending the run configuration to rank %d: %w", r, err)
			}
		}
		return nil
	}
	msg, err := ep.RecvBytes(ctx, 0, tagAgree, 1<<16)
	if err != nil {
		return fmt.Errorf("train: receiving rank 0's run configuration: %w", err)
	}
	theirs, err := runcfg.Parse(string(msg))
	if err != nil {
		return fmt.Errorf("train: rank 0's run configuration: %w", err)
	}
	if len(theirs) != len(mine) {
		return fmt.Errorf("train: rank 0 sent %d run settings, this rank has %d: a different dsgd version?", len(theirs), len(mine))
	}
	if d, differ := runcfg.Compare(mine, theirs); differ {
		return fmt.Errorf("train: rank %d's %s is %s, rank 0's is %s: every rank must run the same configuration", ep.Rank(), d.Name, d.Mine, d.Theirs)
	}
	return nil
}
