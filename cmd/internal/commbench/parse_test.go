package commbench

import (
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  string
	}{
		{"1", 1 << 20, ""},
		{"240", 240 << 20, ""},
		{"64KiB", 64 << 10, ""},
		{" 1.5 mib", 3 << 19, ""},
		{"0.0625", 64 << 10, ""},
		{"1GiB", 1 << 30, ""},
		{"4096B", 4096, ""},
		{"3B", 0, "float32s"},
		{"0", 0, "out of range"},
		{"-1", 0, "out of range"},
		{"3GiB", 0, "out of range"},
		{"NaN", 0, "want a number"},
		{"KiB", 0, "want a number"},
		{"", 0, "want a number"},
	}
	for _, c := range cases {
		got, err := ParseByteSize(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%q: got %d, %v; want error %q", c.in, got, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	if got, err := ParseByteSizes("1,4,64KiB"); err != nil || len(got) != 3 || got[2] != 64<<10 {
		t.Errorf("list: %v %v", got, err)
	}
}

func FuzzParseByteSizes(f *testing.F) {
	for _, s := range []string{"1,4,16,64,240", "64KiB", "1.5MiB", "4096B", "1e3", "-0", "0x10", ",", "1GiB,2GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := ParseByteSizes(s)
		if err != nil {
			return
		}
		for _, b := range sizes {
			if b <= 0 || b%4 != 0 || b > MaxBytes {
				t.Fatalf("%q gave %d", s, b)
			}
		}
	})
}

// TestCheckNamesFields: Check's refusals name Options' fields, which the
// command renames to its flags.
func TestCheckNamesFields(t *testing.T) {
	ok := Options{Reps: 1, PSReps: 1, PSFloats: 1, Timeout: 1, CommWait: 1}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.PSReps = 0 }, "Options.Reps and Options.PSReps"},
		{func(o *Options) { o.Warmup = -1 }, "Options.Warmup and Options.PSWarmup"},
		{func(o *Options) { o.PSFloats = MaxBytes }, "Options.PSFloats"},
		{func(o *Options) { o.CommWait = 0 }, "Options.Timeout and Options.CommWait"},
	} {
		o := ok
		tc.set(&o)
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if _, err := ParseParts("mem,gpu"); err == nil || !strings.Contains(err.Error(), `unknown part "gpu"`) {
		t.Errorf("ParseParts: %v", err)
	}
	if got, err := ParseIntList("2, 4", 2); err != nil || len(got) != 2 || got[1] != 4 {
		t.Errorf("ParseIntList: %v %v", got, err)
	}
}
