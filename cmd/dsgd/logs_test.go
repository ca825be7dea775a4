package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"testing"
)

// envOf is a getenv of the given pairs.
func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestLogStreams: a solo process and rank 0 of a launched job stamp both
// streams; another rank drops its progress and prefixes its problems with
// its rank; a rank of dsgd's own launcher writes plainly (the launcher
// stamps what it passes on).
func TestLogStreams(t *testing.T) {
	stamp := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} `
	for _, tc := range []struct {
		name             string
		env              []string
		wantOut, wantErr string // regexps of the whole output
	}{
		{"solo", nil, "^progress\n$", "^" + stamp + "dsgd: warning: w\n$"},
		{"mpirun rank 0", []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"}, "^progress\n$", "^" + stamp + "dsgd: warning: w\n$"},
		{"mpirun rank 1", []string{"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2"}, "^$", "^" + stamp + `\[rank 1\] dsgd: warning: w` + "\n$"},
		{"srun rank 3", []string{"SLURM_PROCID", "3", "SLURM_NTASKS", "4"}, "^$", "^" + stamp + `\[rank 3\] dsgd: warning: w` + "\n$"},
		{"torchrun rank 2", []string{"RANK", "2", "WORLD_SIZE", "4"}, "^$", "^" + stamp + `\[rank 2\] dsgd: warning: w` + "\n$"},
		{"dsgd's own child", []string{"DSGD_CHILD", "1"}, "^progress\n$", "^dsgd: warning: w\n$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o, e bytes.Buffer
			out, errw, flush := logStreams(&o, &e, envOf(tc.env...))
			fmt.Fprintln(out, "progress")
			fmt.Fprintln(errw, "dsgd: warning: w")
			flush()
			if !regexp.MustCompile(tc.wantOut).MatchString(o.String()) {
				t.Errorf("stdout %q, want /%s/", o.String(), tc.wantOut)
			}
			if !regexp.MustCompile(tc.wantErr).MatchString(e.String()) {
				t.Errorf("stderr %q, want /%s/", e.String(), tc.wantErr)
			}
		})
	}
}

// TestOwnTerminal: a character device is a terminal of this process's own
// unless a launcher started it (Open MPI gives each rank a pty), or dsgd's
// own launcher did; a buffer never is.
func TestOwnTerminal(t *testing.T) {
	dev, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0) // a character device, as a tty is
	if err != nil {
		t.Skip(err)
	}
	defer dev.Close()
	for _, tc := range []struct {
		name string
		env  []string
		want bool
	}{
		{"alone", nil, true},
		{"Open MPI", []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2"}, false},
		{"PMI", []string{"PMI_RANK", "0", "PMI_SIZE", "2"}, false},
		{"Slurm", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2"}, false},
		{"dsgd --transport tcp", []string{"DSGD_CHILD", "1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownTerminal(dev, envOf(tc.env...)); got != tc.want {
				t.Errorf("ownTerminal = %v, want %v", got, tc.want)
			}
			if ownTerminal(&bytes.Buffer{}, envOf(tc.env...)) {
				t.Error("a buffer counts as a terminal")
			}
		})
	}
}

// TestAsksHelp: help output is left without timestamps.
func TestAsksHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"help"}, true},
		{[]string{"--help"}, true},
		{[]string{"train", "-h"}, true},
		{[]string{"train", "--iters", "20"}, false},
		{[]string{"worker", "--rank", "1"}, false},
	} {
		if got := asksHelp(tc.args); got != tc.want {
			t.Errorf("asksHelp(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
