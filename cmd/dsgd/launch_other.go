//go:build !linux

package main

import "os/exec"

// ownGroup leaves cmd in the launcher's process group where there is no
// parent-death signal: a terminal's Ctrl-C then reaches every rank
// directly (and the launcher's forwarded signal counts as a second one).
func ownGroup(cmd *exec.Cmd) {}
