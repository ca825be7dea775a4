package main

import (
	"strings"
	"testing"
)

// TestServerOffLoopbackNeedsToken: ps and smb bound beyond loopback
// refuse to start without a token; there is no default one.
func TestServerOffLoopbackNeedsToken(t *testing.T) {
	t.Setenv("DSGD_TOKEN", "")
	t.Setenv("DSGD_TOKEN_FILE", "")
	for _, args := range [][]string{
		{"smb", "--listen", "0.0.0.0:0"},
		{"ps", "--scheme", "async", "--workers", "2", "--model", "lenet", "--data", "synthetic:N=64", "--listen", "0.0.0.0:0"},
	} {
		code, _, errs := runCmd(t, "", args...)
		if code == 0 || !strings.Contains(errs, "token") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming the token", args, code, errs)
		}
	}
}
