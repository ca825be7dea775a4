package main

import (
	"strings"
	"testing"
	"time"

	"dsgd/training/train"
)

func TestParseStraggle(t *testing.T) {
	cases := []struct {
		in   string
		want *train.Straggler
		err  string
	}{
		{"", nil, ""},
		{"1:20ms", &train.Straggler{Rank: 1, Delay: 20 * time.Millisecond}, ""},
		{"p=0.25:1s", &train.Straggler{Rank: -1, Prob: 0.25, Delay: time.Second}, ""},
		{"p=1:0s", &train.Straggler{Rank: -1, Prob: 1}, ""},
		{"4:20ms", nil, "not a worker in [0,4)"},
		{"-1:20ms", nil, "not a worker"},
		{"1", nil, "want RANK:DELAY"},
		{"1:fast", nil, "not a duration"},
		{"1:-5ms", nil, "not a duration"},
		{"p=0:5ms", nil, "not in (0,1]"},
		{"p=1.5:5ms", nil, "not in (0,1]"},
		{"p=x:5ms", nil, "not in (0,1]"},
	}
	for _, c := range cases {
		got, err := parseStraggle(c.in, 4)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "--straggle") {
				t.Errorf("%q: error %v, want one naming --straggle and %q", c.in, err, c.err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.in, err)
		case (got == nil) != (c.want == nil) || (got != nil && *got != *c.want):
			t.Errorf("%q: got %+v, want %+v", c.in, got, c.want)
		}
	}
}

// FuzzParseStraggle: any flag value is parsed or refused, never a panic,
// and what is accepted is a valid straggler.
func FuzzParseStraggle(f *testing.F) {
	for _, s := range []string{"1:20ms", "p=0.5:1s", "", ":", "p=:", "3:1h", "p=1e-9:1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStraggle(s, 4)
		if err != nil || st == nil {
			return
		}
		if st.Delay < 0 || (st.Rank < 0 && (st.Prob <= 0 || st.Prob > 1)) || st.Rank >= 4 {
			t.Fatalf("%q gave %+v", s, st)
		}
	})
}

// TestAsyncFlags: the asynchronous schemes' flags reach the run and bad
// combinations are refused naming the flag.
func TestAsyncFlags(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	base := []string{"train", "--solver", "solver.prototxt", "--iters", "4", "--threads", "1", "--snapshot-prefix", "none", "--test-interval", "0"}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--scheme", "easgd", "--workers", "2", "--alpha", "0.1", "--rho", "0.5"}, "--alpha and --rho"},
		{[]string{"--scheme", "async", "--workers", "2", "--interval", "0"}, "--interval"},
		{[]string{"--scheme", "async", "--workers", "2", "--finish", "last"}, "--finish"},
		{[]string{"--scheme", "ssp", "--workers", "2", "--straggle", "7:1ms"}, "--straggle"},
		{[]string{"--scheme", "easgd", "--workers", "2", "--alpha", "1.5"}, "alpha"},
		{[]string{"--scheme", "hybrid", "--workers", "3", "--groups", "2"}, "multiple of the groups"},
		{[]string{"--scheme", "sync-easgd", "--workers", "2", "--variant", "4"}, "variant"},
		// hogwild with --finish ran forever; the synchronous schemes
		// ignored it.
		{[]string{"--scheme", "hogwild", "--workers", "2", "--finish", "master"}, "aligned termination (--finish)"},
		{[]string{"--scheme", "sync-tree", "--workers", "2", "--finish", "master"}, "aligned termination (--finish)"},
	}
	for _, c := range bad {
		code, _, errs := runCmd(t, dir, append(append([]string(nil), base...), c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want a failure naming %q", c.args, code, errs, c.want)
		}
	}
	// easgd drops the solver's momentum (SC17 Eq. 1) and keeps its step
	// size, and says so.
	// So does sync-easgd (SC17 Alg. 2–3 apply Eq. 1), which kept the
	// momentum and made its comparison with easgd-rr mix two rules.
	for _, name := range []string{"easgd", "sync-easgd"} {
		code, out, errs := runCmd(t, dir, append(append([]string(nil), base...), "--scheme", name, "--workers", "2")...)
		if code != 0 || !strings.Contains(out, "plain SGD (SC17 Eq. 1): momentum 0") {
			t.Errorf("%s: exit %d\n%s\n%s", name, code, out, errs)
		}
	}
	// local-sgd, the seventeenth scheme, needs nothing of the command
	// but --interval's H.
	if code, out, errs := runCmd(t, dir, append(append([]string(nil), base...), "--scheme", "local-sgd", "--workers", "2", "--interval", "2")...); code != 0 || !strings.Contains(out, "done: 4 iterations") {
		t.Errorf("local-sgd: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := runCmd(t, dir, append(append([]string(nil), base...), "--scheme", "ssp", "--workers", "2", "--staleness", "1", "--straggle", "1:2ms", "--finish", "average")...)
	if code != 0 || !strings.Contains(out, "straggler:") || !strings.Contains(out, "center:") {
		t.Errorf("ssp: exit %d\n%s\n%s", code, out, errs)
	}
}
