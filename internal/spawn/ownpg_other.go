//go:build !linux

package spawn

import "os/exec"

// ownGroup leaves cmd in this process's group where there is no
// parent-death signal: a terminal's Ctrl-C then reaches every child
// directly (and the forwarded stop counts as a second one).
func ownGroup(cmd *exec.Cmd) {}
