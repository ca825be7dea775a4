package collective

import (
	"flag"
	"strings"
	"testing"
)

func TestParseAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Algorithm
		err  bool
	}{
		{"auto", Auto, false},
		{"tree", Tree, false},
		{"ring", Ring, false},
		{"rd", RecursiveDoubling, false},
		{"recursive-doubling", RecursiveDoubling, false},
		{" Ring ", Ring, false},
		{"RD", RecursiveDoubling, false},
		{"", Auto, true},
		{"butterfly", Auto, true},
		{"ring2", Auto, true},
	} {
		got, err := ParseAlgorithm(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseAlgorithm(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "auto, tree, ring, rd") {
			t.Errorf("ParseAlgorithm(%q): error %q does not list the choices", tc.in, err)
		}
	}
}

func TestAlgorithmFlagAndText(t *testing.T) {
	for _, a := range []Algorithm{Auto, Tree, Ring, RecursiveDoubling} {
		b, err := a.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Algorithm
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Errorf("%v: round trip gave %v, %v", a, back, err)
		}
	}
	if _, err := Algorithm(9).MarshalText(); err == nil {
		t.Error("MarshalText of an unknown algorithm succeeded")
	}
	if got := Algorithm(9).String(); got != "Algorithm(9)" {
		t.Errorf("String() = %q", got)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	alg := Auto
	fs.Var(&alg, "allreduce", "allreduce algorithm")
	if err := fs.Parse([]string{"-allreduce", "ring"}); err != nil || alg != Ring {
		t.Errorf("flag parse: %v, %v", alg, err)
	}
	if err := fs.Parse([]string{"-allreduce", "nope"}); err == nil {
		t.Error("flag parse accepted nope")
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		size, n int
		want    Algorithm
	}{
		{1, 1 << 24, RecursiveDoubling}, // nothing to do; no rounds either way
		{2, 100, RecursiveDoubling},     // small
		{2, SmallMessageBytes/4 - 1, RecursiveDoubling},
		{2, SmallMessageBytes / 4, Ring},
		{8, 1 << 20, Ring},                             // 4 MiB
		{64, SmallMessageBytes / 4, RecursiveDoubling}, // 1 KiB chunks: too many rounds for the ring
		{64, 64 * MinRingChunkBytes / 4, Ring},
	} {
		if got := Auto.Resolve(tc.size, tc.n); got != tc.want {
			t.Errorf("Auto.Resolve(%d, %d) = %v, want %v", tc.size, tc.n, got, tc.want)
		}
	}
	for _, a := range []Algorithm{Tree, Ring, RecursiveDoubling} {
		if got := a.Resolve(4, 10); got != a {
			t.Errorf("%v.Resolve = %v", a, got)
		}
	}
}

func FuzzParseAlgorithm(f *testing.F) {
	for _, s := range []string{"auto", "tree", "ring", "rd", "recursive-doubling", "", "RING", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAlgorithm(s)
		if err != nil {
			return
		}
		// Whatever parses prints back to something that parses the same.
		b, err := ParseAlgorithm(a.String())
		if err != nil || b != a {
			t.Fatalf("%q parsed as %v, which reparses as %v, %v", s, a, b, err)
		}
	})
}
