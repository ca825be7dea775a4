package scheme

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

var layout = Layout{N: 10, Blocks: []Range{{Lo: 0, Hi: 6}, {Lo: 6, Hi: 8}, {Lo: 8, Hi: 10}}}

// trace renders actions compactly for golden comparisons.
func trace(acts []Action) string {
	var parts []string
	for _, a := range acts {
		s := a.Op.String()
		switch a.Op {
		case Allreduce:
			s += fmt.Sprintf("(%v[%d:%d])", a.R.Buf, a.R.Lo, a.R.Hi)
		case Send, Recv:
			add := ""
			if a.Add {
				add = "+"
			}
			s += fmt.Sprintf("(%v[%d:%d]%s,%d)", a.R.Buf, a.R.Lo, a.R.Hi, add, a.Peer)
		case Scale:
			s += fmt.Sprintf("(%g)", a.Factor)
		case Fill:
			s += fmt.Sprintf("(%v[%d:%d]=%g)", a.R.Buf, a.R.Lo, a.R.Hi, a.Factor)
		case Update, IterDone:
			s += fmt.Sprintf("(%d)", a.Iter)
			if a.Skipped {
				s += "skipped"
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestValidate(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "gossip", Workers: 2, MaxIter: 1, Layout: layout}, "unknown scheme"},
		{Config{Name: "sync-tree", Workers: 0, MaxIter: 1, Layout: layout}, "at least 1 worker"},
		{Config{Name: "seq", Workers: 2, MaxIter: 1, Layout: layout}, "seq runs 1 worker"},
		{Config{Name: "sync-ring", Workers: 2, StartIter: 5, MaxIter: 1, Layout: layout}, "empty"},
		{Config{Name: "overlap", Workers: 2, MaxIter: 1}, "no parameters"},
	}
	for _, c := range cases {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestAllreduceWorkerTrace(t *testing.T) {
	cases := []struct {
		name   string
		cfg    Config
		events []Event
		want   []string // one trace per event, after Start
	}{
		{
			name:   "seq",
			cfg:    Config{Name: "seq", Workers: 1, MaxIter: 2, Layout: layout},
			events: []Event{{Kind: ComputeDone, Loss: 1.5}, {Kind: ComputeDone, Loss: 1}},
			want:   []string{"compute", "update(0) iter-done(0) compute", "update(1) iter-done(1) finish"},
		},
		{
			name:   "sync-tree packed",
			cfg:    Config{Name: "sync-tree", Workers: 2, MaxIter: 1, Pack: true, Layout: layout},
			events: []Event{{Kind: ComputeDone}, {Kind: Done, ID: 1}},
			want:   []string{"compute", "allreduce(grads[0:10])", "scale(0.5) update(0) iter-done(0) finish"},
		},
		{
			name:   "sync-ring per layer, backward order",
			cfg:    Config{Name: "sync-ring", Workers: 4, MaxIter: 1, Layout: layout},
			events: []Event{{Kind: ComputeDone}, {Kind: Done, ID: 1}, {Kind: Done, ID: 2}, {Kind: Done, ID: 3}},
			want:   []string{"compute", "allreduce(grads[8:10]) allreduce(grads[6:8]) allreduce(grads[0:6])", "", "", "scale(0.25) update(0) iter-done(0) finish"},
		},
		{
			name: "overlap gathers layers into buckets of 4 values",
			cfg:  Config{Name: "overlap", Workers: 2, MaxIter: 1, Layout: layout, Bucket: 4},
			events: []Event{
				{Kind: GradsReady, Lo: 8, Hi: 10}, // 2 values: held
				{Kind: GradsReady, Lo: 6, Hi: 8},  // adjacent: 4 values, sent
				{Kind: GradsReady, Lo: 0, Hi: 6},  // 6 values, sent
				{Kind: ComputeDone},
				{Kind: Done, ID: 1}, {Kind: Done, ID: 2},
			},
			want: []string{"compute", "", "allreduce(grads[6:10])", "allreduce(grads[0:6])", "", "", "scale(0.5) update(0) iter-done(0) finish"},
		},
		{
			name: "overlap flushes a partial bucket when backward ends",
			cfg:  Config{Name: "overlap", Workers: 2, MaxIter: 1, Layout: layout, Bucket: 100},
			events: []Event{
				{Kind: GradsReady, Lo: 8, Hi: 10}, {Kind: GradsReady, Lo: 6, Hi: 8}, {Kind: GradsReady, Lo: 0, Hi: 6},
				{Kind: ComputeDone}, {Kind: Done, ID: 1},
			},
			want: []string{"compute", "", "", "", "allreduce(grads[0:10])", "scale(0.5) update(0) iter-done(0) finish"},
		},
		{
			name: "overlap hands each layer off during backward",
			cfg:  Config{Name: "overlap", Workers: 2, MaxIter: 1, Layout: layout},
			events: []Event{
				{Kind: GradsReady, Lo: 8, Hi: 10}, {Kind: Done, ID: 1},
				{Kind: GradsReady, Lo: 6, Hi: 8},
				{Kind: GradsReady, Lo: 0, Hi: 6},
				{Kind: ComputeDone}, // two reductions still in flight: the exposed wait
				{Kind: Done, ID: 2}, {Kind: Done, ID: 3},
			},
			want: []string{"compute", "allreduce(grads[8:10])", "", "allreduce(grads[6:8])", "allreduce(grads[0:6])", "", "", "scale(0.5) update(0) iter-done(0) finish"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ranks, err := New(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{trace(ranks[0].Step(Event{Kind: Start}))}
			for _, ev := range c.events {
				got = append(got, trace(ranks[0].Step(ev)))
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestOverlapWatchesGrads(t *testing.T) {
	ranks, _ := New(Config{Name: "overlap", Workers: 3, MaxIter: 1, Layout: layout})
	if a := ranks[0].Step(Event{Kind: Start}); len(a) != 1 || !a[0].WatchGrads {
		t.Fatalf("overlap's compute does not watch gradients: %+v", a)
	}
	ranks, _ = New(Config{Name: "sync-tree", Workers: 3, MaxIter: 1, Layout: layout})
	if a := ranks[0].Step(Event{Kind: Start}); a[0].WatchGrads || a[0].Op != Compute {
		t.Fatalf("sync-tree's compute watches gradients: %+v", a)
	}
}

func TestParameterServerTrace(t *testing.T) {
	cfg := Config{Name: "sync-ps", Workers: 2, MaxIter: 1, Pack: true, Layout: layout}
	ranks, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranks) != 3 || cfg.Ranks() != 3 {
		t.Fatalf("sync-ps with 2 workers has %d ranks, want 3", len(ranks))
	}
	w, srv := ranks[0], ranks[2]
	steps := []struct {
		r    Rank
		ev   Event
		want string
	}{
		{w, Event{Kind: Start}, "compute"},
		{w, Event{Kind: ComputeDone}, "send(grads[0:10],2) recv(params[0:10],2)"},
		{srv, Event{Kind: Start}, "recv(grads[0:10],0) recv(grads[0:10]+,1)"},
		{srv, Event{Kind: Done, ID: 1}, ""},
		{srv, Event{Kind: Done, ID: 2}, "scale(0.5) update(0) send(params[0:10],0) send(params[0:10],1)"},
		{srv, Event{Kind: Done, ID: 3}, ""},
		{srv, Event{Kind: Done, ID: 4}, "iter-done(0) finish"},
		{w, Event{Kind: Done, ID: 1}, ""},
		{w, Event{Kind: Done, ID: 2}, "iter-done(0) finish"},
	}
	for i, s := range steps {
		if got := trace(s.r.Step(s.ev)); got != s.want {
			t.Fatalf("step %d: got %q, want %q", i, got, s.want)
		}
	}
}

func TestResumeStartsAtStartIter(t *testing.T) {
	ranks, _ := New(Config{Name: "seq", Workers: 1, StartIter: 3, MaxIter: 4, Layout: layout})
	ranks[0].Step(Event{Kind: Start})
	if got := trace(ranks[0].Step(Event{Kind: ComputeDone})); got != "update(3) iter-done(3) finish" {
		t.Fatalf("got %q", got)
	}
	ranks, _ = New(Config{Name: "sync-tree", Workers: 2, StartIter: 4, MaxIter: 4, Layout: layout})
	if got := trace(ranks[0].Step(Event{Kind: Start})); got != "finish" {
		t.Fatalf("a finished run starts with %q", got)
	}
}

// TestInitialBroadcast: with Broadcast, every rank of a scheme whose
// ranks talk to each other first receives rank 0's weights (TRL Alg. 5
// line 2), and only then starts its scheme; the center schemes do not.
func TestInitialBroadcast(t *testing.T) {
	for _, name := range []string{"sync-tree", "sync-ps", "overlap", "sync-easgd", "hybrid"} {
		c := Config{Name: name, Workers: 2, MaxIter: 1, Layout: small, Variant: 1, Groups: 1, Alpha: 0.5, Broadcast: true}
		ranks, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for r, rk := range ranks {
			first := rk.Step(Event{Kind: Start})
			if len(first) != 1 || first[0].Op != Broadcast || first[0].Peer != 0 || first[0].R != (Range{Params, 0, small.N}) {
				t.Fatalf("%s rank %d starts with %v, want the broadcast of rank 0's weights", name, r, atrace(first))
			}
			plain, _ := New(Config{Name: name, Workers: 2, MaxIter: 1, Layout: small, Variant: 1, Groups: 1, Alpha: 0.5})
			want := atrace(plain[r].Step(Event{Kind: Start}))
			if got := atrace(rk.Step(Event{Kind: Done, ID: first[0].ID})); got != want {
				t.Errorf("%s rank %d after the broadcast: %s, want the scheme's start %s", name, r, got, want)
			}
		}
	}
	ranks, err := New(Config{Name: "easgd", Workers: 2, MaxIter: 1, Layout: small, Alpha: 0.5, Broadcast: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := atrace(ranks[1].Step(Event{Kind: Start})); got != "join#1" {
		t.Errorf("easgd with Broadcast starts %s, want its join (the center gives the weights)", got)
	}
}

// TestOverlapAccumulates: TRL's overlap (Alg. 6) accumulates each block
// the moment backward finishes it, before the compute is done, waits for
// the sums beside the queue, and averages and updates once every sum is
// back.
func TestOverlapAccumulates(t *testing.T) {
	layout := Layout{N: 10, Blocks: []Range{{Lo: 0, Hi: 6}, {Lo: 6, Hi: 10}}}
	ranks, err := New(Config{Name: "overlap", Workers: 2, MaxIter: 1, Layout: layout, Accumulate: true})
	if err != nil {
		t.Fatal(err)
	}
	w := ranks[1]
	steps := []struct {
		ev   Event
		want string
	}{
		{Event{Kind: Start}, "compute"},
		{Event{Kind: GradsReady, Lo: 6, Hi: 10}, "accumulate#1(grads[6:10]) gather#2(grads[6:10])"},
		{Event{Kind: GradsReady, Lo: 0, Hi: 6}, "accumulate#3(grads[0:6]) gather#4(grads[0:6])"},
		{Event{Kind: ComputeDone}, ""},
		{Event{Kind: Done, ID: 1}, ""},
		{Event{Kind: Done, ID: 3}, ""},
		{Event{Kind: Done, ID: 4}, ""},
		{Event{Kind: Done, ID: 2}, "scale(grads[0:10]*=0.5) update(0) iter-done(0) finish"},
	}
	for i, s := range steps {
		if got := atrace(w.Step(s.ev)); got != s.want {
			t.Fatalf("step %d (%+v): %s, want %s", i, s.ev, got, s.want)
		}
	}
	if _, err := New(Config{Name: "sync-tree", Workers: 2, MaxIter: 1, Layout: layout, Accumulate: true}); err == nil {
		t.Error("sync-tree with Accumulate was accepted")
	}
}

// TestActionArith: the local ops' arithmetic on a rank's buffers, and the
// ops it leaves to the driver.
func TestActionArith(t *testing.T) {
	scale := func(a float32, x []float32) {
		for i := range x {
			x[i] *= a
		}
	}
	axpy := func(a float32, x, y []float32) {
		for i := range x {
			y[i] += a * x[i]
		}
	}
	for _, tc := range []struct {
		a          Action
		params     []float32
		done       bool
		wantParams []float32
	}{
		{Action{Op: Scale, R: Range{Buf: Params, Lo: 1, Hi: 3}, Factor: 2}, []float32{1, 2, 3, 4}, true, []float32{1, 4, 6, 4}},
		{Action{Op: Copy, R: Range{Buf: Params, Lo: 0, Hi: 2}, Src: Range{Buf: Grads, Lo: 2, Hi: 4}}, []float32{1, 2, 3, 4}, true, []float32{30, 40, 3, 4}},
		{Action{Op: Axpy, R: Range{Buf: Params, Lo: 2, Hi: 4}, Src: Range{Buf: Grads, Lo: 0, Hi: 2}, Factor: -1}, []float32{1, 2, 3, 4}, true, []float32{1, 2, -7, -16}},
		{Action{Op: Fill, R: Range{Buf: Params, Lo: 3, Hi: 4}, Factor: 9}, []float32{1, 2, 3, 4}, true, []float32{1, 2, 3, 9}},
		{Action{Op: Update, Iter: 1}, []float32{1, 2, 3, 4}, false, []float32{1, 2, 3, 4}},
		{Action{Op: IterDone}, []float32{1, 2, 3, 4}, false, []float32{1, 2, 3, 4}},
	} {
		bufs := map[Buffer][]float32{Params: tc.params, Grads: {10, 20, 30, 40}}
		done := tc.a.Arith(func(r Range) []float32 { return bufs[r.Buf][r.Lo:r.Hi] }, VecOps{Scale: scale, Axpy: axpy})
		if done != tc.done || !slices.Equal(bufs[Params], tc.wantParams) {
			t.Errorf("%v: done %v, params %v; want %v, %v", tc.a.Op, done, bufs[Params], tc.done, tc.wantParams)
		}
		if !slices.Equal(bufs[Grads], []float32{10, 20, 30, 40}) {
			t.Errorf("%v changed its source: %v", tc.a.Op, bufs[Grads])
		}
	}
}
