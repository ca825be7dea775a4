package main

import "testing"

// TestNoSnapshotCommands: the commands whose stop message leaves out the
// snapshot are commands, and the ones that train are not among them.
func TestNoSnapshotCommands(t *testing.T) {
	names := map[string]bool{}
	for _, c := range commands() {
		names[c.Name] = true
	}
	for name := range noSnapshot {
		if !names[name] {
			t.Errorf("noSnapshot names %q, which is no command", name)
		}
	}
	for _, name := range []string{"train", "worker", "ps", "compare", "elastic-coordinator", "smb"} {
		if noSnapshot[name] {
			t.Errorf("%s snapshots, but its stop message would say it does not", name)
		}
	}
}
