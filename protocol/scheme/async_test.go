package scheme

import (
	"fmt"
	"strings"
	"testing"
)

// atrace renders actions with every field the asynchronous schemes use:
// ranges, copy and axpy sources, factors, iterations, communication IDs
// and whether a compute and a transfer are issued in the same step.
func atrace(acts []Action) string {
	rg := func(r Range) string { return fmt.Sprintf("%v[%d:%d]", r.Buf, r.Lo, r.Hi) }
	var parts []string
	for _, a := range acts {
		s := a.Op.String()
		switch a.Op {
		case Copy:
			s += fmt.Sprintf("(%s<-%s)", rg(a.R), rg(a.Src))
		case Axpy:
			s += fmt.Sprintf("(%s+=%g*%s)", rg(a.R), a.Factor, rg(a.Src))
		case Scale:
			s += fmt.Sprintf("(%s*=%g)", rg(a.R), a.Factor)
		case Update, IterDone:
			s += fmt.Sprintf("(%d)", a.Iter)
			if a.Skipped {
				s += "skipped"
			}
		case Pull, Push:
			s += fmt.Sprintf("#%d(%s)", a.ID, rg(a.R))
		case Elastic:
			s += fmt.Sprintf("#%d(%s,%g)", a.ID, rg(a.R), a.Factor)
		case Round:
			s += fmt.Sprintf("#%d(%s,%d)", a.ID, rg(a.R), a.Iter)
		case Clock:
			s += fmt.Sprintf("#%d(%d,%d)", a.ID, a.Iter, a.Staleness)
		case Join, Leave:
			s += fmt.Sprintf("#%d", a.ID)
		case Broadcast, Reduce:
			s += fmt.Sprintf("#%d(%s,%d)", a.ID, rg(a.R), a.Peer)
			if a.Flag {
				s += "flag"
			}
		case Fill:
			s += fmt.Sprintf("(%s=%g)", rg(a.R), a.Factor)
		case Allreduce, Accumulate, Gather:
			s += fmt.Sprintf("#%d(%s)", a.ID, rg(a.R))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

var small = Layout{N: 4, Blocks: []Range{{Lo: 0, Hi: 4}}}

func TestAsyncSchemesTrace(t *testing.T) {
	done := func(id int) Event { return Event{Kind: Done, ID: id} }
	cases := []struct {
		name   string
		cfg    Config
		rank   int
		events []Event
		want   []string // one trace per event, after Start's
	}{
		{
			// SpeeDO's Downpour: local steps, and every S = 2 iterations
			// push the change since the last pull (not waited for) and
			// pull the center.
			name: "async interval 2",
			cfg:  Config{Name: "async", Workers: 2, MaxIter: 2, Interval: 2, Layout: small},
			events: []Event{
				{Kind: Done, ID: 1, Iter: 0}, done(2),
				{Kind: ComputeDone}, done(3),
				{Kind: ComputeDone}, done(4), done(5), done(6), done(7),
			},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"copy(aux[0:4]<-params[0:4]) compute",
				"update(0) clock#3(0,-1)",
				"iter-done(0) compute",
				"update(1) copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) push#4(delta[0:4]) pull#5(params[0:4])",
				"",
				"copy(aux[0:4]<-params[0:4]) clock#6(1,-1)",
				"iter-done(1) leave#7",
				"finish",
			},
		},
		{
			// A restarted worker continues from the count Join returns.
			name:   "ssp resumes from join",
			cfg:    Config{Name: "ssp", Workers: 2, MaxIter: 10, Staleness: 3, Layout: small},
			events: []Event{{Kind: Done, ID: 1, Iter: 9}, done(2), {Kind: ComputeDone}, {Kind: Done, ID: 3}, done(4), done(5)},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"copy(aux[0:4]<-params[0:4]) compute",
				"update(9) copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) push#3(delta[0:4]) clock#4(9,3)",
				"",
				"pull#5(params[0:4])",
				"copy(aux[0:4]<-params[0:4]) iter-done(9) leave#6",
			},
		},
		{
			// SSP reads after the clock admits it (s = 0 is BSP).
			name:   "ssp reads after the clock",
			cfg:    Config{Name: "ssp", Workers: 2, MaxIter: 10, Staleness: 0, Layout: small},
			events: []Event{{Kind: Done, ID: 1, Iter: 0}, done(2), {Kind: ComputeDone}, done(3), done(4), done(5)},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"copy(aux[0:4]<-params[0:4]) compute",
				"update(0) copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) push#3(delta[0:4]) clock#4(0,0)",
				"",
				"pull#5(params[0:4])",
				"copy(aux[0:4]<-params[0:4]) iter-done(0) compute",
			},
		},
		{
			// SpeeDO's weed-out: while it computes the worker watches its
			// round (closed#); gradients that miss the round are dropped,
			// and the worker jumps to the round the center names and
			// pulls the fresh weights.
			name: "weedout dropped",
			cfg:  Config{Name: "weedout", Workers: 3, MaxIter: 10, Layout: small},
			events: []Event{
				done(1), done(2),
				{Kind: ComputeDone}, {Kind: Done, ID: 4, Iter: 4, Dropped: true}, {Kind: Done, ID: 3, Iter: 4}, done(5),
				{Kind: ComputeDone}, {Kind: Done, ID: 7, Iter: 5}, done(8),
			},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"compute closed",
				"round#4(grads[0:4],0)",
				"iter-done(3)skipped pull#5(params[0:4])", // rounds 0-3 closed without it
				"", // the watch of round 0, answered late: ignored
				"compute closed",
				"round#7(grads[0:4],4)",
				"pull#8(params[0:4])",
				"iter-done(4) compute closed",
			},
		},
		{
			// SpeeDO 3.4's restart: the round closes while the worker
			// still computes; it aborts the compute, pulls the fresh
			// weights and continues with the round now open, reporting the
			// rounds closed without it as skipped (no loss of its own).
			name: "weedout restarts a straggler",
			cfg:  Config{Name: "weedout", Workers: 3, MaxIter: 10, Layout: small},
			events: []Event{
				done(1), done(2),
				{Kind: Done, ID: 3, Iter: 6}, {Kind: ComputeDone, Aborted: true}, done(4),
			},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"compute closed",
				"abort iter-done(5)skipped",
				"pull#4(params[0:4])",
				"compute closed",
			},
		},
		{
			// Async EASGD: the elastic exchange uses the weights the
			// gradient was computed on, before the solver step.
			name:   "easgd",
			cfg:    Config{Name: "easgd", Workers: 2, MaxIter: 1, Alpha: 0.25, Layout: small},
			events: []Event{done(1), done(2), {Kind: ComputeDone}, done(3), done(4), done(5)},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"compute",
				"elastic#3(params[0:4],0.25)",
				"update(0) clock#4(0,-1)",
				"iter-done(0) leave#5",
				"finish",
			},
		},
		{
			// ShmCaffe's SEASGD: read W_g, move toward it, and push the
			// increment without waiting: the compute is issued with the
			// push and runs before the push's Done arrives.
			name: "seasgd",
			cfg:  Config{Name: "seasgd", Workers: 2, MaxIter: 2, Alpha: 0.2, Layout: small},
			events: []Event{
				done(1), done(2), done(3),
				{Kind: ComputeDone}, done(4), done(5),
			},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"pull#3(aux[0:4])",
				"copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) scale(delta[0:4]*=0.2) axpy(params[0:4]+=-1*delta[0:4]) push#4(delta[0:4]) compute",
				"update(0) clock#5(0,-1)",
				"",
				"iter-done(0) pull#6(aux[0:4])",
			},
		},
		{
			// Hybrid: the root of a group of 2 reads the center when the
			// iteration starts, moves toward it, broadcasts to its group
			// and pushes its increment while the group computes; then the
			// group allreduces and updates, and the root clocks.
			name:   "hybrid root",
			cfg:    Config{Name: "hybrid", Workers: 4, Groups: 2, MaxIter: 1, Alpha: 0.5, Layout: small},
			rank:   2,
			events: []Event{done(1), done(2), done(3), done(4), done(5), {Kind: ComputeDone}, done(6), done(7), done(8)},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"broadcast#3(params[0:4],2)",
				"pull#4(aux[0:4])",
				"copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) scale(delta[0:4]*=0.5) axpy(params[0:4]+=-1*delta[0:4]) broadcast#5(params[0:4],2)",
				"push#6(delta[0:4]) compute",
				"allreduce#7(grads[0:4])",
				"",
				"scale(grads[0:4]*=0.5) update(0) clock#8(0,-1)",
				"iter-done(0) leave#9",
			},
		},
		{
			// Hybrid with --finish (ShmCaffe III.E for HSGD): after its
			// clock the root writes the center's stop decision into the
			// flag its group broadcasts; every rank of the group stops on
			// the same iteration.
			name:   "hybrid aligned root",
			cfg:    Config{Name: "hybrid", Workers: 4, Groups: 2, MaxIter: 5, Alpha: 0.5, Aligned: true, Layout: small},
			rank:   2,
			events: []Event{done(1), done(2), done(3), done(4), done(5), {Kind: ComputeDone}, done(6), done(7), {Kind: Done, ID: 8, Stop: true}, {Kind: Done, ID: 9, Stop: true}},
			want: []string{
				"join#1",
				"pull#2(params[0:4])",
				"broadcast#3(params[0:4],2)",
				"pull#4(aux[0:4])",
				"copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) scale(delta[0:4]*=0.5) axpy(params[0:4]+=-1*delta[0:4]) broadcast#5(params[0:4],2)",
				"push#6(delta[0:4]) compute",
				"allreduce#7(grads[0:4])",
				"",
				"scale(grads[0:4]*=0.5) update(0) clock#8(0,-1)",
				"fill(spare[0:1]=1) broadcast#9(spare[0:1],2)flag",
				"iter-done(0) leave#10",
			},
		},
		{
			// The other rank of that group never clocks: it stops when
			// the root's flag says so.
			name:   "hybrid aligned member",
			cfg:    Config{Name: "hybrid", Workers: 4, Groups: 2, MaxIter: 5, Alpha: 0.5, Aligned: true, Layout: small},
			rank:   3,
			events: []Event{done(1), done(2), {Kind: ComputeDone}, done(3), {Kind: Done, ID: 4, Stop: true}},
			want: []string{
				"broadcast#1(params[0:4],2)",
				"broadcast#2(params[0:4],2)",
				"compute",
				"allreduce#3(grads[0:4])",
				"scale(grads[0:4]*=0.5) update(0) broadcast#4(spare[0:1],2)flag",
				"iter-done(0) finish",
			},
		},
		{
			// Sync EASGD variant 3 issues the compute and the broadcast of
			// the center together, and the reduce of the differences
			// without waiting; the elastic step and the update wait for
			// both.
			name:   "sync-easgd variant 3",
			cfg:    Config{Name: "sync-easgd", Workers: 2, MaxIter: 1, Alpha: 0.5, Variant: 3, Layout: small},
			events: []Event{done(1), {Kind: ComputeDone}, done(2)},
			want: []string{
				"copy(aux[0:4]<-params[0:4]) compute broadcast#1(aux[0:4],0)",
				"copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) copy(spare[0:4]<-delta[0:4]) reduce#2(spare[0:4],0)",
				"",
				"axpy(params[0:4]+=-0.5*delta[0:4]) update(0) axpy(aux[0:4]+=0.5*spare[0:4]) iter-done(0) finish",
			},
		},
		{
			// Variant 2 waits for the compute before the exchange.
			name:   "sync-easgd variant 2",
			cfg:    Config{Name: "sync-easgd", Workers: 2, MaxIter: 1, Alpha: 0.5, Variant: 2, Layout: small},
			events: []Event{{Kind: ComputeDone}, done(1), done(2)},
			want: []string{
				"copy(aux[0:4]<-params[0:4]) compute",
				"broadcast#1(aux[0:4],0)",
				"copy(delta[0:4]<-params[0:4]) axpy(delta[0:4]+=-1*aux[0:4]) axpy(params[0:4]+=-0.5*delta[0:4]) update(0) reduce#2(delta[0:4],0)",
				"axpy(aux[0:4]+=0.5*delta[0:4]) iter-done(0) finish",
			},
		},
		{
			// Variant 1's master keeps the center in its Params and
			// contributes zeros to the reduction.
			name:   "sync-easgd variant 1 master",
			cfg:    Config{Name: "sync-easgd", Workers: 2, MaxIter: 1, Alpha: 0.5, Variant: 1, Layout: small},
			rank:   2,
			events: []Event{done(1), done(2)},
			want: []string{
				"broadcast#1(params[0:4],2)",
				"scale(grads[0:4]*=0) reduce#2(grads[0:4],2)",
				"axpy(params[0:4]+=0.5*grads[0:4]) iter-done(0) finish",
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ranks, err := New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := ranks[c.rank]
			got := []string{atrace(r.Step(Event{Kind: Start}))}
			for _, ev := range c.events {
				got = append(got, atrace(r.Step(ev)))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestComputeBeforePushDone: in seasgd the exchange's push overlaps the
// compute: the trace issues the compute while the push is in flight.
func TestComputeBeforePushDone(t *testing.T) {
	ranks, err := New(Config{Name: "seasgd", Workers: 2, MaxIter: 3, Alpha: 0.2, Layout: small})
	if err != nil {
		t.Fatal(err)
	}
	r := ranks[1]
	r.Step(Event{Kind: Start})
	r.Step(Event{Kind: Done, ID: 1})
	r.Step(Event{Kind: Done, ID: 2})
	acts := r.Step(Event{Kind: Done, ID: 3})
	push, comp := -1, -1
	for i, a := range acts {
		switch a.Op {
		case Push:
			push = i
		case Compute:
			comp = i
		}
	}
	if push < 0 || comp < push {
		t.Fatalf("want a push then a compute in one step, got %s", atrace(acts))
	}
	// The compute finishing first must not wait for the push.
	if got := atrace(r.Step(Event{Kind: ComputeDone})); !strings.HasPrefix(got, "update(0)") {
		t.Fatalf("after the compute, before the push's Done: %q", got)
	}
}

// TestHogwildTalksToNoCenter: hogwild workers share weights in memory and
// issue no center operation.
func TestHogwildTalksToNoCenter(t *testing.T) {
	ranks, err := New(Config{Name: "hogwild", Workers: 2, MaxIter: 2, Layout: small})
	if err != nil {
		t.Fatal(err)
	}
	r := ranks[0]
	got := []string{atrace(r.Step(Event{Kind: Start}))}
	got = append(got, atrace(r.Step(Event{Kind: ComputeDone})), atrace(r.Step(Event{Kind: ComputeDone})))
	want := []string{"compute", "update(0) iter-done(0) compute", "update(1) iter-done(1) finish"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
	if uses, _ := (Config{Name: "hogwild", Workers: 2}).UsesCenter(); uses {
		t.Fatal("hogwild says it uses a center")
	}
}

func TestUsesCenter(t *testing.T) {
	cases := []struct {
		cfg  Config
		uses bool
		n    int
	}{
		{Config{Name: "async", Workers: 4}, true, 4},
		{Config{Name: "seasgd", Workers: 3}, true, 3},
		{Config{Name: "hybrid", Workers: 4, Groups: 2}, true, 2},
		{Config{Name: "sync-easgd", Workers: 4, Variant: 1}, false, 0},
		{Config{Name: "sync-tree", Workers: 4}, false, 0},
	}
	for _, c := range cases {
		if uses, n := c.cfg.UsesCenter(); uses != c.uses || n != c.n {
			t.Errorf("%s: %v, %d; want %v, %d", c.cfg.Name, uses, n, c.uses, c.n)
		}
	}
	if got := (Config{Name: "sync-easgd", Workers: 4, Variant: 1}).Ranks(); got != 5 {
		t.Errorf("sync-easgd variant 1 with 4 workers runs on %d ranks, want 5", got)
	}
	if got := (Config{Name: "sync-easgd", Workers: 4, Variant: 3}).Ranks(); got != 4 {
		t.Errorf("sync-easgd variant 3 with 4 workers runs on %d ranks, want 4", got)
	}
}

func TestValidateAsync(t *testing.T) {
	base := func(name string) Config {
		return Config{Name: name, Workers: 4, MaxIter: 1, Layout: small, Alpha: 0.2, Variant: 1, Groups: 2}
	}
	with := func(name string, f func(*Config)) Config { c := base(name); f(&c); return c }
	cases := []struct {
		cfg  Config
		want string
	}{
		{with("easgd", func(c *Config) { c.Alpha = -0.1 }), "alpha"},
		{with("seasgd", func(c *Config) { c.Alpha = 1 }), "alpha"},
		{with("sync-easgd", func(c *Config) { c.Alpha = 1.5 }), "alpha"},
		{with("sync-easgd", func(c *Config) { c.Variant = 0 }), "variant 0"},
		{with("sync-easgd", func(c *Config) { c.Variant = 4 }), "variant 4"},
		{with("hybrid", func(c *Config) { c.Groups = 3 }), "multiple of the groups"},
		{with("hybrid", func(c *Config) { c.Groups = 0 }), "groups"},
		{with("ssp", func(c *Config) { c.Staleness = -1 }), "staleness"},
		{with("async", func(c *Config) { c.Interval = -1 }), "interval -1"},
		{with("weedout", func(c *Config) { c.Aligned = true }), "aligned"},
		// hogwild has no center to count at (it never ended), and the
		// synchronous schemes are aligned by construction: --finish is
		// refused rather than ignored.
		{with("hogwild", func(c *Config) { c.Aligned = true }), "aligned"},
		{with("sync-tree", func(c *Config) { c.Aligned = true }), "aligned"},
		{with("sync-ps", func(c *Config) { c.Aligned = true }), "aligned"},
		{with("sync-easgd", func(c *Config) { c.Aligned = true }), "aligned"},
		{with("overlap", func(c *Config) { c.Aligned = true }), "aligned"},
	}
	for _, c := range cases {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: got %v, want %q", c.cfg.Name, c.cfg, err, c.want)
		}
	}
	// The same settings are valid where they belong.
	for _, name := range Names() {
		c := base(name)
		if name == "seq" {
			c.Workers = 1
		}
		if _, err := New(c); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Aligned termination works where every worker clocks at a center.
	for _, name := range []string{"async", "ssp", "easgd-rr", "easgd", "measgd", "hogwild-easgd", "seasgd"} {
		if _, err := New(with(name, func(c *Config) { c.Aligned = true })); err != nil {
			t.Errorf("%s aligned: %v", name, err)
		}
	}
	// Alpha 0 is allowed: EASGD with rho = 0 is plain SGD.
	if _, err := New(with("easgd", func(c *Config) { c.Alpha = 0 })); err != nil {
		t.Errorf("alpha 0: %v", err)
	}
}
