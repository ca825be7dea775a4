package main

import "testing"

// TestElasticRefused: --elastic where it cannot run is refused before
// training, naming the flags at fault.
func TestElasticRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--scheme", "sync-ring", "--elastic", "2:4"}, []string{"--elastic", "--transport inproc"}},
		{[]string{"--transport", "tcp", "--scheme", "async", "--elastic", "2:4"}, []string{"--elastic", "--scheme async"}},
		{[]string{"--transport", "tcp", "--scheme", "sync-easgd", "--elastic", "2:4"}, []string{"--elastic", "--scheme sync-easgd"}},
		{[]string{"--transport", "tcp", "--scheme", "sync-ring", "--elastic", "3"}, []string{"--elastic \"3\"", "MIN:MAX"}},
		{[]string{"--transport", "tcp", "--scheme", "sync-ring", "--elastic", "3:2"}, []string{"--elastic \"3:2\"", "MIN <= MAX"}},
		{[]string{"--transport", "tcp", "--scheme", "sync-ring", "--elastic", "3:4"}, []string{"--workers 2", "--elastic 3:4"}},
		{[]string{"--transport", "tcp", "--scheme", "sync-ring", "--elastic", "2:4", "--compress", "powersgd:1"}, []string{"--elastic", "--compress powersgd:1"}},
		{[]string{"--transport", "tcp", "--scheme", "sync-ring", "--elastic", "2:4", "--reduce", "exact"}, []string{"--reduce exact", "--elastic 2:4"}},
		{[]string{"--transport", "tcp", "--scheme", "sync-ring", "--elastic-coordinator", "127.0.0.1:1"}, []string{"--elastic-coordinator", "--elastic MIN:MAX"}},
	} {
		expectRefusal(t, dir, append([]string{"train", "--solver", "solver.prototxt", "--workers", "2", "--threads", "1", "--iters", "20"}, tc.args...), tc.want...)
	}
	// A worker with --elastic needs its coordinator.
	expectRefusal(t, dir, []string{"worker", "--solver", "solver.prototxt", "--scheme", "sync-ring", "--elastic", "2:3"}, "--elastic-coordinator")
	// The coordinator of its own needs its bounds, and a token beyond
	// loopback.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"elastic-coordinator"}, "--elastic MIN:MAX is required"},
		{[]string{"elastic-coordinator", "--elastic", "0:2"}, "--elastic \"0:2\""},
		{[]string{"elastic-coordinator", "--elastic", "1:2", "--listen", "0.0.0.0:0"}, "needs a token"},
	} {
		expectRefusal(t, dir, tc.args, tc.want)
	}
}
