package main

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchCommQuick runs the whole command on tiny sizes, peer disabled:
// every table has its rows, and their numbers parse and are positive.
func TestBenchCommQuick(t *testing.T) {
	var out, errb bytes.Buffer
	t0 := time.Now()
	code := run(context.Background(), []string{"bench-comm", "--quick", "--worlds", "2", "--sizes", "64KiB", "--peer", "none", "--ps-workers", "2"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	if d := time.Since(t0); d > 60*time.Second {
		t.Errorf("--quick took %v", d)
	}
	text := out.String()
	for _, want := range []string{"memcpy (copy)", "float32 add", "best = the fastest of ours", "alpha-beta model (PS)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	positive := func(line string, fields []string) {
		t.Helper()
		for _, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("field %q of %q is not a positive number", f, line)
			}
		}
	}
	var allreduce, inproc, tcpRow bool
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 9 && f[0] == "2" && f[1] == "0.0625" && (f[7] == "tcp" || f[7] == "shm" || f[7] == "shm-own"):
			// world MiB alg tcp shm shm-own inproc best ok (--quick: paths tcp,shm,shm-own,inproc)
			allreduce = true
			if f[2] != "ring" && f[2] != "rd" {
				t.Errorf("auto resolved to %q: %q", f[2], line)
			}
			positive(line, f[3:7]) // tcp, shm, shm-own and inproc bus bandwidth
			if f[8] != "ok" {
				t.Errorf("result not ok: %q", line)
			}
		case len(f) >= 19 && (f[0] == "inproc" || f[0] == "tcp") && f[1] == "2":
			if f[0] == "inproc" {
				inproc = true
			} else {
				tcpRow = true
			}
			nums := []string{}
			for _, x := range f[2:] {
				if x != "|" {
					nums = append(nums, x)
				}
			}
			positive(line, nums)
			if f[3] != "1.00" || f[5] != "1.00" {
				t.Errorf("p=2 is its own reference, rel should be 1.00: %q", line)
			}
		}
	}
	if !allreduce || !inproc || !tcpRow {
		t.Errorf("rows missing (allreduce %v, inproc PS/tree %v, tcp PS/tree %v):\n%s", allreduce, inproc, tcpRow, text)
	}
}

func TestBenchCommFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--peer", "none", "--sizes", "3B"}, "whole number of float32s"},
		{[]string{"--peer", "none", "--sizes", "1,x"}, "want a number"},
		{[]string{"--peer", "none", "--worlds", "1"}, "out of range"},
		{[]string{"--peer", "none", "--alg", "butterfly"}, "unknown allreduce algorithm"},
		{[]string{"--peer", "none", "--parts", "mem,gpu"}, "unknown part"},
		{[]string{"--peer", "none", "--reps", "0"}, "at least 1"},
		{[]string{"--peer", "none", "extra"}, "unexpected argument"},
		{[]string{"--child"}, "exactly one argument"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"bench-comm"}, c.args...), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errb.String(), c.want)
			}
		})
	}
}
