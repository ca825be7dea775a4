package scheme

import (
	"fmt"
	"slices"
	"strings"
)

// Info is one scheme of the catalogue: its name, where it comes from, how
// many ranks it runs on, what it asks of a center, its defaults, and how
// to build its ranks. The catalogue is a fixed table (one file per
// family: family_sync.go, family_speedo.go, family_easgd.go,
// family_shmcaffe.go); callers ask it instead of comparing names.
type Info struct {
	// Name is the --scheme value.
	Name string
	// Paper says where the scheme is specified.
	Paper string
	// Summary is one line for help and reports.
	Summary string
	// Servers is the number of ranks beyond the workers (a parameter
	// server, a separate master); nil means none.
	Servers func(Config) int
	// Center is how the scheme's workers use a center (package center).
	Center CenterUse
	// Policy is how that center serialises the workers' exchanges.
	Policy Policy
	// Elastic: the scheme uses the elastic moving rate Alpha.
	Elastic bool
	// PlainSGD: the paper's update rule is plain SGD, with no momentum
	// (SC17 Eq. 1); the command drops the solver's momentum and keeps
	// its step size.
	PlainSGD bool
	// Aligned: the scheme supports the finish rules of ShmCaffe III.E
	// (every worker clocks at a center).
	Aligned bool
	// SharedSteps: every worker's solver steps land in one set of
	// weights (Downpour's merge, hogwild's shared memory), so a
	// comparison at a fixed base_lr scales it by 1/workers.
	SharedSteps bool
	// MinWorkers and MaxWorkers bound the worker count (0: no bound).
	MinWorkers, MaxWorkers int
	// Role names the ranks beyond the workers (Servers) in timelines
	// and logs; empty means "server".
	Role string
	// ServerUpdates: the rank beyond the workers holds the solver and
	// applies every update (a synchronous parameter server): it is the
	// updating rank, it snapshots, and `dsgd ps` runs it.
	ServerUpdates bool
	// SharedWeights: the workers update one set of weights in memory
	// with no lock (hogwild); they run in one process only.
	SharedWeights bool
	// Exact: the scheme promises seq's weights bit for bit: its
	// reductions only add gradients, so they can carry exact sums
	// (Config.GradWidth, package engine/tensor/exact).
	Exact bool
	// Accumulator: the workers can reduce through TRL's shared
	// accumulator when they run in one process (Config.Accumulate).
	Accumulator bool
	// CenterSolver: the center applies a solver step of its own to each
	// closed round (weed-out), so it holds the solver and every
	// parameter, and cannot be sharded.
	CenterSolver bool
	// OwnCenter: the workers keep the center weights themselves, and
	// they are the model the run trains (sync-easgd: the master rank in
	// variant 1, every worker's Aux otherwise).
	OwnCenter bool
	// Outer: Alpha is the learning rate of the scheme's outer optimizer
	// (DiLoCo's), positive, DiLoCoOuterLR by default.
	Outer bool
	// AlphaPerGroup: the elastic exchange is one per group, so the
	// default moving rate is 0.9/groups, not 0.9/workers (hybrid).
	AlphaPerGroup bool
	// SharedBuffers: across processes, the center is ShmCaffe's shared
	// buffer server (`dsgd smb`), not a parameter server.
	SharedBuffers bool
	// Streaming: the workers synchronise their weights fragment by
	// fragment (Config.Fragments, Overlap, Mix and OuterBits apply:
	// streaming-diloco); otherwise FragmentPlan is the whole net.
	Streaming bool
	// Staleness: a worker runs at most Config.Staleness iterations ahead
	// of the slowest (ssp); with a bound of 0 the center serves pulls as
	// of the global clock (Config.ClockedReads).
	Staleness bool
	// AveragesGrads: with an averaging period of 1 the workers can
	// average their gradients instead of their weights
	// (Config.AverageGrads: local-sgd).
	AveragesGrads bool
	// Resizable: a group of the scheme may change members between two
	// exchanges (dsgd train --elastic): its members are in lockstep, so
	// the state of the one that completed the most iterations (the
	// server's, with ServerUpdates) is the group's.
	Resizable bool
	// Periodic: the workers exchange every Config.Interval iterations,
	// not every one (the iterations between are local steps).
	Periodic bool
	// GradAllreduce: the workers sum their gradients by an allreduce
	// every iteration, where a gradient compressor can sit.
	GradAllreduce bool
	// check rejects settings the scheme cannot run with (nil: none).
	check func(Config) error
	// newRanks builds the n = Config.Ranks() ranks, rank r at index r.
	newRanks func(c Config, n int) []Rank
}

// CenterUse is how a scheme's workers use a center.
type CenterUse int

const (
	// NoCenter: the workers talk to each other only.
	NoCenter CenterUse = iota
	// EveryWorker: every worker talks to the center, and only to it.
	EveryWorker
	// GroupRoots: each group's root talks to the center (its id there is
	// its group), and the group's ranks to each other (hybrid).
	GroupRoots
)

// Policy is how a center serialises the workers' exchanges: a
// center.Policy, which says what each one does. The protocol cores import
// no dsgd package (layering_test.go), so the catalogue names the center's
// values here and whoever builds the center converts them,
// center.Policy(in.Policy); TestPolicyIsCenters pins them equal.
type Policy int

// The center's policies: center.FCFS, center.RoundRobin, center.Hogwild.
const (
	FCFS Policy = iota
	RoundRobin
	Hogwild
)

// catalogue is every scheme, in the order help texts show them.
var catalogue = slices.Concat(syncFamily, speedoFamily, easgdFamily, shmcaffeFamily)

// Named is c.Name, or DefaultName(c.Workers) when it is empty.
func (c Config) Named() string {
	if c.Name == "" {
		return DefaultName(c.Workers)
	}
	return c.Name
}

// Schemes returns the catalogue, in help-text order. The slice is a copy.
func Schemes() []Info { return slices.Clone(catalogue) }

// Lookup returns the scheme called name.
func Lookup(name string) (Info, error) {
	for _, in := range catalogue {
		if in.Name == name {
			return in, nil
		}
	}
	return Info{}, fmt.Errorf("scheme: unknown scheme %q; choose one of %s", name, strings.Join(Names(), ", "))
}

// DefaultAlpha is the elastic moving rate when none is given (for an
// Outer scheme, its outer learning rate, DiLoCoOuterLR): 0.9 over
// the number of parties in the exchange (SC17 5: β = 0.9 = α·p), the
// workers or, for AlphaPerGroup, the groups.
func (in Info) DefaultAlpha(workers, groups int) float64 {
	if in.Outer {
		return DiLoCoOuterLR
	}
	if in.AlphaPerGroup && groups > 0 {
		return 0.9 / float64(groups)
	}
	return 0.9 / float64(max(workers, 1))
}

// DefaultAlphaFor is DefaultAlpha for a job whose membership may change
// (resizable: dsgd's --elastic): there, every scheme but an Outer one
// takes 0, since no elastic scheme but diloco reads it and a default by
// the worker count would differ between a joiner and the group it joins.
func (in Info) DefaultAlphaFor(workers, groups int, resizable bool) float64 {
	if resizable && !in.Outer {
		return 0
	}
	return in.DefaultAlpha(workers, groups)
}

// DefaultGroups is hybrid's number of synchronous groups (Config.Groups)
// when none is given: 2 for an even worker count, else 1. A job whose
// membership may change (resizable) takes 1: no elastic scheme has
// groups, and a count by the workers would differ between a joiner and
// its group.
func DefaultGroups(workers int, resizable bool) int {
	if workers%2 == 0 && !resizable {
		return 2
	}
	return 1
}

// RoleName is Role, or "server".
func (in Info) RoleName() string {
	if in.Role == "" {
		return "server"
	}
	return in.Role
}

// Names lists the schemes New knows, in the order the help text shows them.
func Names() []string {
	out := make([]string, len(catalogue))
	for i, in := range catalogue {
		out[i] = in.Name
	}
	return out
}

// ResizableNames lists the schemes whose groups may change members
// (Info.Resizable), in catalogue order.
func ResizableNames() []string { return namesWhere(func(in Info) bool { return in.Resizable }) }

// PlainSGDNames lists the schemes whose paper's update rule is plain SGD
// (Info.PlainSGD), in catalogue order.
func PlainSGDNames() []string { return namesWhere(func(in Info) bool { return in.PlainSGD }) }

// namesWhere lists the schemes for which has reports true, in catalogue
// order.
func namesWhere(has func(Info) bool) []string {
	var out []string
	for _, in := range catalogue {
		if has(in) {
			out = append(out, in.Name)
		}
	}
	return out
}

// info is c's scheme; a zero Info for an unknown name.
func (c Config) info() Info {
	in, _ := Lookup(c.Name)
	return in
}

// Info returns c's scheme from the catalogue (Validate reports an unknown
// name).
func (c Config) Info() Info { return c.info() }

// workers returns n ranks with one per worker built by mk (the rest are
// the caller's to fill).
func workers(c Config, n int, mk func(Config, int) Rank) []Rank {
	out := make([]Rank, n)
	for r := 0; r < c.Workers; r++ {
		out[r] = mk(c, r)
	}
	return out
}
