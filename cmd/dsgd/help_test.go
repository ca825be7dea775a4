package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHelpGroupsFlags: a command with many flags prints them under
// headings, each flag exactly once; one with few prints them flat.
func TestHelpGroupsFlags(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  --([a-z0-9_-]+)`)
	for _, tc := range []struct {
		cmd     string
		grouped bool
	}{
		{"train", true},
		{"worker", true},
		{"compare", true},
		{"time", false},
		{"smb", false},
	} {
		code, out, errs := runCmd(t, t.TempDir(), tc.cmd, "-h")
		if code != 0 {
			t.Fatalf("%s -h: exit %d: %s", tc.cmd, code, errs)
		}
		seen := map[string]int{}
		for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
			seen[m[1]]++
		}
		want := commandFlags(t.Context())[tc.cmd]
		if len(want) == 0 {
			t.Fatalf("%s: no flags captured", tc.cmd)
		}
		for _, f := range want {
			if seen[f] != 1 {
				t.Errorf("%s -h lists --%s %d times, want once", tc.cmd, f, seen[f])
			}
		}
		if got := strings.Contains(out, "\nScheme (how the workers combine their work):\n"); got != tc.grouped {
			t.Errorf("%s -h: grouped %v, want %v:\n%s", tc.cmd, got, tc.grouped, out)
		}
	}
}

// TestCompletionBash: the completion script offers commands, a command's
// flags and a flag's values, as bash runs it.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine:", err)
	}
	code, out, errs := runCmd(t, t.TempDir(), "completion", "bash")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	script := write(t, t.TempDir(), "dsgd.bash", out)
	for _, tc := range []struct {
		words string
		want  string
	}{
		{"dsgd tr", "train"},
		{"dsgd train --sch", "--scheme"},
		{"dsgd train -scheme sync-r", "sync-ring"},
		{"dsgd train --transport t", "tcp"},
		{"dsgd time --iterat", "--iterations"},
		{"dsgd convert-imageset --resize_h", "--resize_height"},
		{"dsgd extract-f", "extract-features"},
		{"dsgd extract-features --blo", "--blobs"},
		{"dsgd extract-features --backend lev", "leveldb"},
	} {
		words := strings.Fields(tc.words)
		cmd := exec.Command(bash, "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _dsgd; echo "${COMPREPLY[*]}"`, "bash", filepath.Clean(script))
		cmd.Args = append(cmd.Args, words...)
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", tc.words, err)
		}
		if strings.TrimSpace(string(got)) != tc.want {
			t.Errorf("completing %q offers %q, want %q", tc.words, strings.TrimSpace(string(got)), tc.want)
		}
	}
	code, _, errs = runCmd(t, t.TempDir(), "completion", "zsh")
	if code != 2 || !strings.Contains(errs, "dsgd completion bash") {
		t.Errorf("completion zsh: exit %d, %q; want a usage error naming bash", code, errs)
	}
}
