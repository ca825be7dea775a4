package commbench

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"dsgd/internal/bytesize"
)

// Quick are the values of a tiny run, for tests, by option name (the
// command's flag names): the command applies those not given explicitly.
var Quick = map[string]string{
	"worlds": "2", "sizes": "64KiB", "reps": "2", "warmup": "1", "mem": "4MiB",
	"ps-workers": "2", "ps-floats": "65536", "ps-reps": "2", "ps-warmup": "1",
	"peer": "none", "timeout": "1m", "comm-timeout": "20s",
	"paths": "tcp,shm,shm-own,inproc", "mpi-peer": "none",
}

// QuickSummary is Quick as flags, sorted: "--comm-timeout 20s --mem 4MiB
// ... (flags given explicitly win)".
func QuickSummary() string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(Quick)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "--%s %s", k, Quick[k])
	}
	return b.String() + " (flags given explicitly win)"
}

// ParseParts parses Options.Parts: comma-separated names of mem,
// allreduce and ps.
func ParseParts(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p != "mem" && p != "allreduce" && p != "ps" {
			return nil, fmt.Errorf("unknown part %q (choose from mem, allreduce, ps)", p)
		}
		out[p] = true
	}
	return out, nil
}

// ParseIntList parses "2,4,8" (Options.Worlds, Options.PSWorkers):
// integers, each in [lo, 64].
func ParseIntList(s string, lo int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		if v < lo || v > 64 {
			return nil, fmt.Errorf("%d out of range [%d, 64]", v, lo)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseByteSizes parses a comma-separated list of sizes (Options.Sizes;
// each as ParseByteSize).
func ParseByteSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		v, err := ParseByteSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseByteSize parses a buffer size (Options.InprocMax, Options.MemBytes,
// an element of Options.Sizes): a number with an optional unit B, KiB,
// MiB or GiB (case-insensitive); a bare number is MiB. The result must be
// a whole number of float32s, positive and at most MaxBytes.
func ParseByteSize(s string) (int64, error) {
	b, err := bytesize.Parse(s, 1<<20)
	switch {
	case errors.Is(err, bytesize.ErrSyntax):
		return 0, fmt.Errorf("size %q: want a number with an optional unit B, KiB, MiB or GiB (bare numbers are MiB)", strings.TrimSpace(s))
	case errors.Is(err, bytesize.ErrRange) || err == nil && (b <= 0 || b > MaxBytes):
		return 0, fmt.Errorf("size %q out of range (0, 2GiB]", strings.TrimSpace(s))
	case err != nil:
		return 0, fmt.Errorf("size %q is not a whole number of float32s (4 bytes each)", strings.TrimSpace(s))
	case b%4 != 0:
		return 0, fmt.Errorf("size %q is %d bytes, not a whole number of float32s (4 bytes each)", strings.TrimSpace(s), b)
	}
	return b, nil
}

// Check checks o's counts and limits; its errors name o's fields
// (Options.Reps, Options.PSFloats, ...).
func (o *Options) Check() error {
	switch {
	case o.Reps < 1 || o.PSReps < 1:
		return fmt.Errorf("Options.Reps and Options.PSReps must be at least 1")
	case o.Warmup < 0 || o.PSWarmup < 0:
		return fmt.Errorf("Options.Warmup and Options.PSWarmup must not be negative")
	case o.PSFloats < 1 || o.PSFloats > MaxBytes/4:
		return fmt.Errorf("Options.PSFloats %d out of range [1, %d]", o.PSFloats, MaxBytes/4)
	case o.Timeout <= 0 || o.CommWait <= 0:
		return fmt.Errorf("Options.Timeout and Options.CommWait must be positive")
	}
	return nil
}
