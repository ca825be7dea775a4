package main

import (
	"errors"
	"fmt"
	"testing"
)

// TestAsFlags: a library error's Config fields print as the command's
// flags, per subcommand, and the error underneath stays reachable.
func TestAsFlags(t *testing.T) {
	base := errors.New("base")
	for _, tc := range []struct {
		cmd, msg, want string
	}{
		{"train", "train: Config.Compress bf16 with Config.Exact: exact sums cannot be compressed; use float sums (Config.Exact false)",
			"train: --compress bf16 with --reduce exact: exact sums cannot be compressed; use --reduce fast"},
		{"train", "train: hogwild shares weights in memory; it runs in one process only (no Config.Group)",
			"train: hogwild shares weights in memory; it runs with --transport inproc only"},
		{"train", `train: snapshot prefix p is in use by a live run (pid 1, holding p.lock): two runs on one prefix would overwrite each other's snapshots; give this one another Config.SnapshotPrefix (or none)`,
			`train: snapshot prefix p is in use by a live run (pid 1, holding p.lock): two runs on one prefix would overwrite each other's snapshots; give this one another --snapshot-prefix (or "none")`},
		{"train", "Config.CompressWarmup -3 is negative", "--compress-warmup -3 is negative"},
		{"train", "train: Config.Resume x.dsgdsnap: the snapshot was taken from a different net", "train: --resume x.dsgdsnap: the snapshot was taken from a different net"},
		{"test", "train: Config.Resume x.dsgdsnap: the snapshot was taken from a different net", "train: --weights x.dsgdsnap: the snapshot was taken from a different net"},
		{"worker", "tcp: rank 1 listens on 10.0.0.1:0, beyond loopback, and needs a token (Config.Token): without one any host could join",
			"tcp: rank 1 listens on 10.0.0.1:0, beyond loopback, and needs a token (--token or DSGD_TOKEN): without one any host could join"},
	} {
		err := asFlags(fmt.Errorf("%s: %w", tc.msg, base), flagNamesFor(tc.cmd))
		if want := tc.want + ": base"; err.Error() != want {
			t.Errorf("dsgd %s: %q\nwant %q", tc.cmd, err, want)
		}
		if !errors.Is(err, base) {
			t.Errorf("dsgd %s: %q does not unwrap to its cause", tc.cmd, err)
		}
	}
	if err := asFlags(base, trainFlagNames); err != base {
		t.Errorf("an error naming no field came back as %v", err)
	}
	if asFlags(nil, trainFlagNames) != nil {
		t.Error("nil came back non-nil")
	}
}
