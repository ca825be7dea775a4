package spawn

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so that a terminal's
// Ctrl-C reaches only this process, which forwards it once; and has the
// kernel send it SIGTERM if this process dies without doing so.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
