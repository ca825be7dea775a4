package runcfg

import "testing"

func TestCompare(t *testing.T) {
	mine := Fields{{"--seed", "1"}, {"base_lr", "0.01"}, {"--staleness", "3"}}
	cases := []struct {
		name   string
		theirs Fields
		want   Diff
		differ bool
	}{
		{"same", Fields{{"--seed", "1"}, {"base_lr", "0.01"}, {"--staleness", "3"}}, Diff{}, false},
		{"order does not matter", Fields{{"--staleness", "3"}, {"--seed", "1"}, {"base_lr", "0.01"}}, Diff{}, false},
		{"lr", Fields{{"--seed", "1"}, {"base_lr", "50"}, {"--staleness", "3"}}, Diff{"base_lr", "0.01", "50"}, true},
		{"first of two", Fields{{"--seed", "2"}, {"base_lr", "50"}, {"--staleness", "3"}}, Diff{"--seed", "1", "2"}, true},
		{"missing", Fields{{"--seed", "1"}, {"base_lr", "0.01"}}, Diff{"--staleness", "3", "(not set)"}, true},
	}
	for _, c := range cases {
		got, differ := Compare(mine, c.theirs)
		if got != c.want || differ != c.differ {
			t.Errorf("%s: Compare = %+v %v, want %+v %v", c.name, got, differ, c.want, c.differ)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	f := Fields{{"--seed", "1"}, {"lr_policy", "inv gamma 0.0001 power 0.75"}, {"empty", ""}}
	got, err := Parse(f.String())
	if err != nil {
		t.Fatal(err)
	}
	if d, differ := Compare(f, got); differ || len(got) != len(f) {
		t.Fatalf("round trip: %v (%+v)", got, d)
	}
	for _, bad := range []string{"no equals sign", "=0\n", "a=1\nb=2\na=3\n"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if got, err := Parse(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a=1\nb=2\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(got.String())
		if err != nil {
			t.Fatalf("%q: String's output does not parse: %v", s, err)
		}
		if _, differ := Compare(got, again); differ {
			t.Fatalf("%q: round trip differs", s)
		}
	})
}
