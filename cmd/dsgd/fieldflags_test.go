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
			"train: --compress bf16 with --reduce exact: exact sums cannot be compressed; use float sums (--reduce fast)"},
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
