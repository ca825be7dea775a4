package scheme

import (
	"strings"
	"testing"
)

// TestCatalogue: every scheme is described and builds its ranks; names
// are unique; the settings agree with each other.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, in := range Schemes() {
		if in.Name == "" || in.Paper == "" || in.Summary == "" || in.newRanks == nil {
			t.Errorf("%q: incomplete entry %+v", in.Name, in)
		}
		if seen[in.Name] {
			t.Errorf("%s listed twice", in.Name)
		}
		seen[in.Name] = true
		if in.Policy != FCFS && in.Center != EveryWorker {
			t.Errorf("%s: policy %d without a center every worker talks to", in.Name, in.Policy)
		}
		if in.Aligned && in.Center == NoCenter {
			t.Errorf("%s: aligned termination needs a center (every worker, or group roots that tell their groups)", in.Name)
		}
		if in.PlainSGD && !in.Elastic {
			t.Errorf("%s: plain SGD is the EASGD family's rule", in.Name)
		}
		c := Config{Name: in.Name, Workers: 4, Groups: 2, Variant: 1, MaxIter: 1, Alpha: 0.1, Layout: small}
		if in.MaxWorkers == 1 {
			c.Workers = 1
		}
		ranks, err := New(c)
		if err != nil {
			t.Errorf("%s: %v", in.Name, err)
			continue
		}
		if len(ranks) != c.Ranks() {
			t.Errorf("%s: %d ranks built, Ranks says %d", in.Name, len(ranks), c.Ranks())
		}
		for r, rk := range ranks {
			if rk == nil {
				t.Errorf("%s: rank %d not built", in.Name, r)
			}
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("an unknown scheme was found")
	}
	if len(Names()) != 19 {
		t.Errorf("%d schemes, want the 19 of the catalogue (the papers' 17, DiLoCo and Streaming DiLoCo)", len(Names()))
	}
}

// TestSharedSteps: the schemes whose workers' steps land in one set of
// weights are Downpour's (async, ssp) and hogwild's.
func TestSharedSteps(t *testing.T) {
	var got []string
	for _, in := range Schemes() {
		if in.SharedSteps {
			got = append(got, in.Name)
		}
	}
	if strings.Join(got, " ") != "async ssp hogwild" {
		t.Errorf("shared-steps schemes %v, want async ssp hogwild", got)
	}
}

// TestOneSchemeFlags: the settings that only one scheme has name the
// scheme the code used to compare names with.
func TestOneSchemeFlags(t *testing.T) {
	for flag, want := range map[string]string{
		"streaming":      "streaming-diloco",
		"staleness":      "ssp",
		"averages-grads": "local-sgd",
		"accumulator":    "overlap",
		"shared-weights": "hogwild",
	} {
		got := strings.Join(namesWhere(func(in Info) bool {
			return map[string]bool{
				"streaming": in.Streaming, "staleness": in.Staleness, "averages-grads": in.AveragesGrads,
				"accumulator": in.Accumulator, "shared-weights": in.SharedWeights,
			}[flag]
		}), " ")
		if got != want {
			t.Errorf("%s: %q, want %q", flag, got, want)
		}
	}
}

// TestNamed: a Config that names no scheme is DefaultName's for its
// workers, which the catalogue knows and which runs that many workers.
func TestNamed(t *testing.T) {
	for _, tt := range []struct {
		name    string
		workers int
		want    string
	}{{"", 0, "seq"}, {"", 1, "seq"}, {"", 4, "sync-tree"}, {"sync-ring", 4, "sync-ring"}} {
		c := Config{Name: tt.name, Workers: tt.workers}
		if got := c.Named(); got != tt.want {
			t.Errorf("Config{Name: %q, Workers: %d}.Named() = %q, want %q", tt.name, tt.workers, got, tt.want)
		}
		in, err := Lookup(c.Named())
		if err != nil || in.MaxWorkers > 0 && max(tt.workers, 1) > in.MaxWorkers {
			t.Errorf("the default for %d workers, %s, cannot run them (%v, MaxWorkers %d)", tt.workers, c.Named(), err, in.MaxWorkers)
		}
	}
}

// TestDefaults: the bucket is DDP's 1 MiB across processes, none in
// one; hybrid's groups default to 2 for an even worker count,
// 1 otherwise and in a resizable job; the moving rate of a resizable job
// defaults to 0 but for an Outer scheme, whose outer lr stays.
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		workers   int
		resizable bool
		want      int
	}{{4, false, 2}, {3, false, 1}, {4, true, 1}, {1, false, 1}} {
		if got := DefaultGroups(tc.workers, tc.resizable); got != tc.want {
			t.Errorf("DefaultGroups(%d, %v) = %d, want %d", tc.workers, tc.resizable, got, tc.want)
		}
	}
	if DefaultBucket(true) != 1<<18 || DefaultBucket(false) != 0 {
		t.Errorf("DefaultBucket: %d across processes, %d in one; want 1 MiB of float32 (%d), 0", DefaultBucket(true), DefaultBucket(false), 1<<18)
	}
	easgd, _ := Lookup("easgd")
	diloco, _ := Lookup("diloco")
	if got := easgd.DefaultAlphaFor(4, 1, false); got != 0.9/4 {
		t.Errorf("easgd's alpha for 4 workers: %v, want 0.9/4", got)
	}
	if got := easgd.DefaultAlphaFor(4, 1, true); got != 0 {
		t.Errorf("easgd's alpha in a resizable job: %v, want 0", got)
	}
	if got := diloco.DefaultAlphaFor(4, 1, true); got != DiLoCoOuterLR {
		t.Errorf("diloco's outer lr in a resizable job: %v, want %v", got, DiLoCoOuterLR)
	}
}
