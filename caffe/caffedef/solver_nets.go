package caffedef

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"dsgd/caffe/prototxt"
)

// NetSource is where a solver's net comes from: a file, or a net written
// inline in the solver (net_param, train_net_param, test_net_param).
type NetSource struct {
	// Field is the solver field that gave it ("net", "train_net_param",
	// ...); "" when the solver names no net.
	Field string
	// Pos is the field's position in the solver.
	Pos prototxt.Pos
	// Path is the net file, resolved (see SolverDef.Net); "" for an
	// inline net.
	Path string
	// Inline is the inline net, parsed; nil for a file.
	Inline *NetDef
}

// Load returns the net: the inline one, or the file read and parsed.
func (s NetSource) Load() (*NetDef, error) {
	switch {
	case s.Inline != nil:
		return s.Inline, nil
	case s.Path != "":
		return LoadNet(s.Path)
	}
	return nil, fmt.Errorf("config: the solver names no net")
}

// String names the source for messages: the file, or the solver field.
func (s NetSource) String() string {
	if s.Path != "" {
		return s.Path
	}
	return fmt.Sprintf("%s at %s", s.Field, s.Pos)
}

// NetState is the part of Caffe's NetState a solver or the command line
// adds to the phase: the stages and the level that layers' include and
// exclude rules test.
type NetState struct {
	Stages []string
	Level  int
}

// TestNet is one of a solver's test nets.
type TestNet struct {
	Source NetSource
	// Iter is its test_iter: batches per test pass.
	Iter int
	// State is its test_state (the TEST phase is implied).
	State NetState
}

// decodeNets reads the solver's net fields as Caffe's Solver::InitTrainNet
// and InitTestNets do: exactly one train net among net, net_param,
// train_net and train_net_param; test nets from test_net_param, test_net,
// and the generic net (net or net_param) once per remaining test_iter;
// test_iter once per test net; test_state, if given, once per test net.
func decodeNets(d *decoder, r *reader, filename string, s *SolverDef) {
	src := func(f *prototxt.Field) NetSource {
		ns := NetSource{Field: f.Name, Pos: f.Pos}
		if f.Kind == prototxt.KindMessage {
			n, err := parseNetMsg(fmt.Sprintf("%s (%s at %s)", filename, f.Name, f.Pos), f.Msg)
			if err != nil {
				if d.err == nil {
					d.err = err
				}
				return ns
			}
			ns.Inline = n
			return ns
		}
		path := r.strValue(f)
		if r.ok() {
			var note string
			ns.Path, note = resolveNet(filename, path)
			// The generic net is both the train net and each test net:
			// one note for the field, not one per use.
			if note != "" {
				if note = fmt.Sprintf("%s: %s", f.Pos, note); !slices.Contains(s.Notes, note) {
					s.Notes = append(s.Notes, note)
				}
			}
		}
		return ns
	}
	msgField := func(name string) []*prototxt.Field {
		fs := r.all(name)
		for _, f := range fs {
			if f.Kind != prototxt.KindMessage && r.ok() {
				d.failf(f.ValuePos, "%s in solver is a message: write %s { layer { ... } }", name, name)
			}
		}
		return fs
	}
	strField := func(name string) []*prototxt.Field {
		fs := r.all(name)
		for _, f := range fs {
			r.strValue(f)
		}
		return fs
	}
	net, netParam := strField("net"), msgField("net_param")
	trainNet, trainParam := strField("train_net"), msgField("train_net_param")
	testNets, testParams := strField("test_net"), msgField("test_net_param")
	for _, fs := range [][]*prototxt.Field{net, netParam, trainNet, trainParam} {
		if len(fs) > 1 && r.ok() {
			d.failf(fs[1].Pos, "%s in solver is given more than once (first at %s)", fs[1].Name, fs[0].Pos)
		}
	}
	var generic *prototxt.Field
	switch {
	case len(net) > 0 && len(netParam) > 0:
		d.failf(netParam[0].Pos, "solver gives both net (at %s) and net_param; give one", net[0].Pos)
	case len(net) > 0:
		generic = net[0]
	case len(netParam) > 0:
		generic = netParam[0]
	}
	var trains []*prototxt.Field
	for _, fs := range [][]*prototxt.Field{trainParam, trainNet, netParam, net} {
		if len(fs) > 0 {
			trains = append(trains, fs[0])
		}
	}
	if len(trains) > 1 && r.ok() {
		d.failf(trains[1].Pos, "solver names its train net twice (%s at %s and %s at %s); give one of net, net_param, train_net, train_net_param",
			trains[0].Name, trains[0].Pos, trains[1].Name, trains[1].Pos)
	}
	if !r.ok() {
		return
	}
	if len(trains) == 1 {
		s.TrainNet = src(trains[0])
		s.Net = s.TrainNet.Path
	}
	if m := r.msg("train_state"); m != nil {
		s.TrainState = decodeState(d, m, "train_state in solver", "TRAIN")
	}
	iters := r.all("test_iter")
	var its []int
	for _, f := range iters {
		its = append(its, int(r.intValue(f, 0, maxI32)))
	}
	explicit := len(testParams) + len(testNets)
	switch {
	case !r.ok():
		return
	case len(trains) == 0 && explicit == 0:
		// No net at all: the command line gives it (--net), and the
		// test_iter is its.
		if len(its) > 0 {
			s.TestIter = its[0]
		}
		if len(iters) > 1 {
			d.failf(iters[1].Pos, "solver names no net but gives %d test_iter; give one, for the net passed with --net", len(iters))
		}
		r.msgs("test_state")
		return
	case generic == nil && len(iters) != explicit:
		pos := r.m.Pos
		if len(iters) > 0 {
			pos = iters[0].Pos
		}
		d.failf(pos, "solver has %d test nets (test_net, test_net_param) but %d test_iter; give one test_iter per test net", explicit, len(iters))
		return
	case generic != nil && len(iters) < explicit:
		d.failf(r.m.Pos, "solver has %d test nets (test_net, test_net_param) but %d test_iter; give one test_iter per test net", explicit, len(iters))
		return
	}
	var sources []NetSource
	for _, f := range testParams {
		sources = append(sources, src(f))
	}
	for _, f := range testNets {
		sources = append(sources, src(f))
	}
	for len(sources) < len(iters) {
		if len(sources) == explicit {
			g := src(generic)
			sources = append(sources, g)
			continue
		}
		sources = append(sources, sources[explicit])
	}
	states := r.msgs("test_state")
	if len(states) > 0 && len(states) != len(sources) && r.ok() {
		d.failf(states[0].Pos, "solver has %d test_state for %d test nets; give one per test net or none", len(states), len(sources))
		return
	}
	for i, ns := range sources {
		tn := TestNet{Source: ns, Iter: its[i]}
		if len(states) > 0 {
			tn.State = decodeState(d, states[i], "test_state in solver", "TEST")
		}
		s.TestNets = append(s.TestNets, tn)
	}
	if len(s.TestNets) > 0 {
		s.TestIter = s.TestNets[0].Iter
	}
}

// decodeState decodes a NetState given in a solver: stage and level. The
// phase is the solver's to set (phase, TRAIN for the train net, TEST for
// test nets): a state may repeat it, as Caffe's merge then leaves it; the
// other phase, which Caffe would build the net in, is refused.
func decodeState(d *decoder, m *prototxt.Message, ctx, phase string) NetState {
	r := d.reader(m, ctx)
	st := NetState{Level: r.int("level", 0, -maxI32, maxI32), Stages: r.strs("stage")}
	if f := r.one("phase"); f != nil {
		if i := r.enumValue(f, "TRAIN", "TEST"); i >= 0 && f.Value != phase {
			r.valueErr(f, "the solver builds this net in phase %s; phase %s would build it as the other phase's net, which dsgd does not do: remove it", phase, f.Value)
		}
	}
	r.finish()
	return st
}

// resolveNet resolves a solver's net file name as Caffe does, relative to
// the working directory; when no file is there but one is beside the
// solver, it takes that one and says so in note.
func resolveNet(solverFile, name string) (path, note string) {
	if filepath.IsAbs(name) {
		return name, ""
	}
	if _, err := os.Stat(name); err == nil {
		return name, ""
	}
	beside := filepath.Join(filepath.Dir(solverFile), name)
	if _, err := os.Stat(beside); err == nil && beside != name {
		return beside, fmt.Sprintf("net %q is not in the working directory, where Caffe looks; using %s, beside the solver", name, beside)
	}
	return name, ""
}
