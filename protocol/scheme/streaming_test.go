package scheme

import (
	"strings"
	"testing"
)

// driveOne runs a one-worker rank of c to its end with no data, and
// returns, for every iteration, the fragments (by Lo) whose
// pseudo-gradient was taken after it (a Copy into Delta) and whose
// outer step landed (a Copy or Scale of Params); key MaxIter holds the
// synchronisations at the end.
func driveOne(t *testing.T, c Config) (sent, landed map[int][]int) {
	t.Helper()
	ranks, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	rk := ranks[0]
	sent, landed = map[int][]int{}, map[int][]int{}
	iter := c.StartIter
	queue := []Event{{Kind: Start}}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 100000 {
			t.Fatal("the rank never finished")
		}
		ev := queue[0]
		queue = queue[1:]
		for _, a := range rk.Step(ev) {
			switch {
			case a.Op == Compute:
				queue = append(queue, Event{Kind: ComputeDone, Loss: 1})
			case a.Op.IsComm():
				queue = append(queue, Event{Kind: Done, ID: a.ID})
			case a.Op == Copy && a.R.Buf == Delta:
				sent[iter] = append(sent[iter], a.R.Lo)
			case (a.Op == Copy || a.Op == Scale) && a.R.Buf == Params:
				landed[iter] = append(landed[iter], a.R.Lo)
			case a.Op == IterDone:
				iter = a.Iter + 1
			case a.Op == Finish:
				return sent, landed
			}
		}
	}
	t.Fatal("the rank stopped without finishing")
	return
}

// streamLayout is three blocks of 7, 12 and 5 weights.
var streamLayout = Layout{N: 24, Blocks: []Range{{Lo: 0, Hi: 7}, {Lo: 7, Hi: 19}, {Lo: 19, Hi: 24}}}

// TestStreamingSchedule: fragment p's pseudo-gradient is taken after the
// iterations it with (it+1) mod H = (p+1)·H/P mod H and lands τ
// iterations later; at the end the fragments whose weights moved since
// they last equalled the global copy synchronise once more.
func TestStreamingSchedule(t *testing.T) {
	tests := []struct {
		name                string
		p, h, tau, maxIter  int
		wantSent, wantLands map[int][]int
	}{
		// Fragments [0,7) [7,19) [19,24) at offsets 1, 2, 0 of H = 3; at
		// the end (key 6) the two that stepped since their sync.
		{"P3 H3 tau0", 3, 3, 0, 6,
			map[int][]int{0: {0}, 1: {7}, 2: {19}, 3: {0}, 4: {7}, 5: {19}, 6: {0, 7}},
			map[int][]int{0: {0}, 1: {7}, 2: {19}, 3: {0}, 4: {7}, 5: {19}, 6: {0, 7}}},
		{"P3 H3 tau0 ragged end", 3, 3, 0, 5,
			map[int][]int{0: {0}, 1: {7}, 2: {19}, 3: {0}, 4: {7}, 5: {0, 19}},
			map[int][]int{0: {0}, 1: {7}, 2: {19}, 3: {0}, 4: {7}, 5: {0, 19}}},
		// Fragments [0,7) [7,24) at offsets 3, 0 of H = 6, landing one
		// step later; the last in flight lands at the end (mixed), and
		// both fragments synchronise once more.
		{"P2 H6 tau1", 2, 6, 1, 12,
			map[int][]int{2: {0}, 5: {7}, 8: {0}, 11: {7}, 12: {0, 7}},
			map[int][]int{3: {0}, 6: {7}, 9: {0}, 12: {7, 0, 7}}},
		// P = 1 is diloco's schedule: every H steps, and once at the end.
		{"P1 H4", 1, 4, 0, 10,
			map[int][]int{3: {0}, 7: {0}, 10: {0}},
			map[int][]int{3: {0}, 7: {0}, 10: {0}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Name: "streaming-diloco", Workers: 1, MaxIter: tc.maxIter, Interval: tc.h, Fragments: tc.p, Overlap: tc.tau, Mix: 0.5, Layout: streamLayout}
			sent, landed := driveOne(t, c)
			if !sameSchedule(sent, tc.wantSent) {
				t.Errorf("sent %v, want %v", sent, tc.wantSent)
			}
			if !sameSchedule(landed, tc.wantLands) {
				t.Errorf("landed %v, want %v", landed, tc.wantLands)
			}
		})
	}
}

func sameSchedule(a, b map[int][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w := b[k]
		if len(v) != len(w) {
			return false
		}
		for i := range v {
			if v[i] != w[i] {
				return false
			}
		}
	}
	return true
}

// TestFragmentPlan: fragments are contiguous runs of blocks, the largest
// as small as it can be and the rest as even as they can be, and the
// peak bytes of P fragments of equal blocks are 1/P of diloco's.
func TestFragmentPlan(t *testing.T) {
	even := Layout{N: 400, Blocks: []Range{{Lo: 0, Hi: 100}, {Lo: 100, Hi: 200}, {Lo: 200, Hi: 300}, {Lo: 300, Hi: 400}}}
	// cifar10_quick's and LeNet's blocks (weights, biases).
	cifar := layoutOf(2400, 32, 25600, 32, 51200, 64, 65536, 64, 640, 10)
	lenet := layoutOf(500, 20, 25000, 50, 400000, 500, 5000, 10)
	tests := []struct {
		name   string
		c      Config
		bounds []int // Lo of each fragment, then the last Hi
		offs   []int
	}{
		{"3 of 7+12+5", Config{Fragments: 3, Interval: 3, Layout: streamLayout}, []int{0, 7, 19, 24}, []int{1, 2, 0}},
		{"2 of 7+12+5", Config{Fragments: 2, Interval: 4, Layout: streamLayout}, []int{0, 7, 24}, []int{2, 0}},
		{"4 of 4x100", Config{Fragments: 4, Interval: 8, Layout: even}, []int{0, 100, 200, 300, 400}, []int{2, 4, 6, 0}},
		{"2 of 4x100", Config{Fragments: 2, Interval: 8, Layout: even}, []int{0, 200, 400}, []int{4, 0}},
		// The largest is ip1's weights alone (no fragment of conv3's
		// bias alone), the others as even as the blocks allow.
		{"4 of cifar10_quick", Config{Fragments: 4, Interval: 100, Layout: cifar}, []int{0, 28064, 79328, 144864, 145578}, []int{25, 50, 75, 0}},
		// ip1's weights are 93 % of LeNet's: a fragment of their own.
		{"4 of lenet", Config{Fragments: 4, Interval: 100, Layout: lenet}, []int{0, 520, 25570, 425570, 431080}, []int{25, 50, 75, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Name, tc.c.Workers = "streaming-diloco", 4
			plan := tc.c.FragmentPlan()
			if len(plan) != len(tc.offs) {
				t.Fatalf("%d fragments, want %d", len(plan), len(tc.offs))
			}
			for i, f := range plan {
				if f.Lo != tc.bounds[i] || f.Hi != tc.bounds[i+1] || f.Offset != tc.offs[i] {
					t.Errorf("fragment %d: [%d,%d) at %d, want [%d,%d) at %d", i, f.Lo, f.Hi, f.Offset, tc.bounds[i], tc.bounds[i+1], tc.offs[i])
				}
			}
		})
	}
	for _, p := range []int{1, 2, 4} {
		c := Config{Name: "streaming-diloco", Workers: 4, Fragments: p, Interval: 8, Layout: even}
		d := Config{Name: "diloco", Workers: 4, Interval: 8, Layout: even}
		if got, want := c.PeakSyncBytes(), d.PeakSyncBytes()/int64(p); got != want {
			t.Errorf("P=%d: peak %d bytes, want diloco's %d / %d = %d", p, got, d.PeakSyncBytes(), p, want)
		}
		c.OuterBits = 4
		// A ring's 6 messages per worker of 100/P values: 1 scale word
		// and 100/P/8 words of codes each.
		if got, want := c.PeakSyncBytes(), int64(6*(1+(100/p+7)/8)*4); got != want {
			t.Errorf("P=%d, 4 bits: peak %d bytes, want %d", p, got, want)
		}
	}
}

// TestStreamingRefused: settings streaming-diloco cannot run with are
// refused, naming the flag.
func TestStreamingRefused(t *testing.T) {
	base := Config{Name: "streaming-diloco", Workers: 2, MaxIter: 10, Interval: 6, Fragments: 3, Layout: streamLayout, OuterMomentum: 0.9}
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"negative fragments", func(c *Config) { c.Fragments = -1 }, "Config.Fragments"},
		{"more fragments than blocks", func(c *Config) { c.Fragments = 4; c.Interval = 8 }, "Config.Fragments 4 is more than the net's 3 parameter blocks"},
		{"H not a multiple of P", func(c *Config) { c.Interval = 4 }, "Config.Interval 4 is not a multiple of Config.Fragments 3"},
		{"overlap H/P", func(c *Config) { c.Overlap = 2 }, "Config.Overlap 2"},
		{"negative overlap", func(c *Config) { c.Overlap = -1 }, "Config.Overlap"},
		{"bits", func(c *Config) { c.OuterBits = 12 }, "Config.OuterBits 12"},
		{"mix", func(c *Config) { c.Mix = 1.5 }, "Config.Mix"},
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("the base config is refused: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// layoutOf is blocks of the given sizes, contiguous from 0.
func layoutOf(sizes ...int) Layout {
	var l Layout
	for _, n := range sizes {
		l.Blocks = append(l.Blocks, Range{Lo: l.N, Hi: l.N + n})
		l.N += n
	}
	return l
}
