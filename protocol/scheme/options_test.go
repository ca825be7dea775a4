package scheme

import (
	"strings"
	"testing"
)

// TestOptionsResolve pins the defaults dsgd train and dsgd simulate
// share: groups by the worker count, alpha 0.9 over the parties (rho
// times the learning rate when given), an Outer scheme's interval and
// outer learning rate, and the refusal of both alpha and rho.
func TestOptionsResolve(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workers   int
		o         Options
		groups    int
		alpha     float32
		interval  int
		wantsNote bool
	}{
		{"easgd", 4, Options{}, 2, 0.9 / 4, 1, false},
		{"hybrid", 4, Options{}, 2, 0.9 / 2, 1, false},
		{"hybrid", 3, Options{}, 1, 0.9, 1, false},
		{"hybrid", 4, Options{Groups: 4, Interval: 3}, 4, 0.9 / 4, 3, false},
		{"easgd", 4, Options{Alpha: 0.1}, 2, 0.1, 1, false},
		{"easgd", 4, Options{Rho: 2, LR: 0.01}, 2, 0.02, 1, false},
		{"easgd", 4, Options{Resizable: true}, 1, 0, 1, false},
		{"diloco", 2, Options{}, 2, DiLoCoOuterLR, DefaultOuterInterval, true},
		{"diloco", 2, Options{Interval: 5, Alpha: 0.5}, 2, 0.5, 5, true},
	} {
		c := Config{Name: tc.name, Workers: tc.workers}
		note, err := tc.o.Resolve(&c)
		if err != nil {
			t.Fatalf("%s %+v: %v", tc.name, tc.o, err)
		}
		if c.Groups != tc.groups || c.Alpha != tc.alpha || c.Interval != tc.interval || (note != "") != tc.wantsNote {
			t.Errorf("%s/%d %+v: groups %d alpha %g interval %d note %q; want %d %g %d note %v",
				tc.name, tc.workers, tc.o, c.Groups, c.Alpha, c.Interval, note, tc.groups, tc.alpha, tc.interval, tc.wantsNote)
		}
	}
	c := Config{Name: "easgd", Workers: 4}
	if _, err := (Options{Alpha: 0.1, Rho: 2}).Resolve(&c); err == nil || !strings.Contains(err.Error(), "Options.Alpha and Options.Rho") {
		t.Errorf("alpha with rho: %v, want a refusal naming both", err)
	}
}

func TestBucketOf(t *testing.T) {
	if got := BucketOf(-1, true); got != DefaultBucket(true) {
		t.Errorf("BucketOf(-1, true) = %d, want %d", got, DefaultBucket(true))
	}
	if got := BucketOf(-1, false); got != 0 {
		t.Errorf("BucketOf(-1, false) = %d, want 0", got)
	}
	if got := BucketOf(4, false); got != 1024 {
		t.Errorf("BucketOf(4, false) = %d, want 1024", got)
	}
}

// TestOptionsCheck: Alpha in [0, 1) and Rho not negative, each refusal
// naming its field.
func TestOptionsCheck(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{}, ""},
		{Options{Alpha: 0.9, Rho: 2}, ""},
		{Options{Alpha: 1}, "Options.Alpha must be in [0,1), got 1"},
		{Options{Alpha: -0.1}, "Options.Alpha must be in [0,1)"},
		{Options{Rho: -1}, "Options.Rho must not be negative, got -1"},
	} {
		err := tt.o.Check()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: Check() = %v, want %q", tt.o, err, tt.want)
		}
	}
}
