package study

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseWorkers(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"4", []int{4}, ""},
		{"1,2,4", []int{1, 2, 4}, ""},
		{" 1, 3 ,9", []int{1, 3, 9}, ""},
		{"1,2,...,4096", []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}, ""},
		{"1,2,…,16", []int{1, 2, 4, 8, 16}, ""},
		{"4,6,...,12", []int{4, 6, 8, 10, 12}, ""},
		{"4,8,...,20", []int{4, 8, 16, 20}, ""},
		{"1,2,...,5", []int{1, 2, 4, 5}, ""},
		{"2,4,...,8,100", []int{2, 4, 8, 100}, ""},
		{"", nil, "not a worker count"},
		{"0", nil, "outside"},
		{"1,1", nil, "does not increase"},
		{"1,...,8", nil, "two counts before"},
		{"1,2,...", nil, "two counts before it and one after"},
		{"1,2,...,x", nil, "not a worker count"},
		{"1,2,...,4,2", nil, "does not increase"},
		{"1,2,...,100000", nil, "outside"},
		{"1,2,...,65536", []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}, ""},
		{"1,2,...,1000", []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000}, ""},
	}
	for _, tt := range tests {
		got, err := ParseWorkers(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseWorkers(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("ParseWorkers(%q): %v", tt.in, err)
		case tt.err == "" && tt.want != nil && !slices.Equal(got, tt.want):
			t.Errorf("ParseWorkers(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzParseWorkers(f *testing.F) {
	for _, s := range []string{"1", "1,2,...,4096", "4,8,...,20", "1,...", "…", "3,2", "1,2,...,99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParseWorkers(s)
		if err != nil {
			return
		}
		if len(ps) == 0 || len(ps) > maxSweep {
			t.Fatalf("ParseWorkers(%q) = %d counts", s, len(ps))
		}
		for i, p := range ps {
			if p < 1 || p > maxWorkers || (i > 0 && p <= ps[i-1]) {
				t.Fatalf("ParseWorkers(%q) = %v: not increasing within [1,%d]", s, ps, maxWorkers)
			}
		}
	})
}

func TestSimulateMedianRun(t *testing.T) {
	type run struct {
		name string
		d    time.Duration
	}
	key := func(r run) time.Duration { return r.d }
	for _, tc := range []struct {
		runs []run
		want string
	}{
		{[]run{{"a", 3}}, "a"},
		{[]run{{"a", 5}, {"b", 1}, {"c", 3}}, "c"},
		{[]run{{"a", 5}, {"b", 1}, {"c", 3}, {"d", 4}}, "c"},
		{[]run{{"a", 2}, {"b", 2}, {"c", 9}}, "b"},
	} {
		if got := medianRun(tc.runs, key); got.name != tc.want {
			t.Errorf("medianRun(%v) = %v, want %s", tc.runs, got, tc.want)
		}
	}
}

// TestForValidate: the iterations default unless given; each worker gets
// its share of the threads, at least one; the cores default to this
// machine's CPUs over that share unless given.
func TestForValidate(t *testing.T) {
	c := Config{Workers: []int{4}, Iters: 7, Cores: 3}
	c.ForValidate(2, false, true)
	if c.Iters != ValidateIters || c.Threads != 1 || c.Cores != 3 {
		t.Errorf("iters %d, threads %d, cores %v; want %d, 1, 3 (given)", c.Iters, c.Threads, c.Cores, ValidateIters)
	}
	c = Config{Workers: []int{2}, Iters: 7}
	c.ForValidate(8, true, false)
	if c.Iters != 7 || c.Threads != 4 || c.Cores != float64(runtime.NumCPU())/4 {
		t.Errorf("iters %d, threads %d, cores %v; want 7 (given), 4, NumCPU/4", c.Iters, c.Threads, c.Cores)
	}
}
