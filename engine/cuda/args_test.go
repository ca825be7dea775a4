package cuda

import (
	"math"
	"strings"
	"testing"
)

// TestPackArgs checks each argument's 8-byte slot as the kernels read it
// (an int32, a uint32 or a float32 in the low 4 bytes, a pointer in 8),
// whatever an earlier launch left there; that a launch's arguments are
// packed without allocating; and that a type no kernel takes, or too
// many arguments, is an error.
func TestPackArgs(t *testing.T) {
	var vals [maxArgs]uint64
	for i := range vals {
		vals[i] = math.MaxUint64 // an earlier launch's values
	}
	n, neg, u, f, p := 7, -3, uint32(0xdeadbeef), float32(-1.5), Ptr(0x7f0012345678)
	if err := packArgs(&vals, []any{n, neg, u, f, p, 0}); err != nil {
		t.Fatal(err)
	}
	want := []uint64{7, 0xfffffffd, 0xdeadbeef, uint64(math.Float32bits(-1.5)), 0x7f0012345678, 0}
	for i, w := range want {
		if vals[i] != w {
			t.Errorf("slot %d = %#x, want %#x", i, vals[i], w)
		}
	}
	if a := testing.AllocsPerRun(100, func() {
		if err := packArgs(&vals, []any{n, p, f, u, p.Add(n)}); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("packing a launch's arguments allocates %v times", a)
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{n, 1.5}, "argument 1 is not an int, uint32, float32 or Ptr"},
		{[]any{int64(3)}, "argument 0 is not"},
		{make([]any, maxArgs+1), "33 arguments, at most 32"},
	} {
		if err := packArgs(&vals, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
