package main

import (
	"io"
	"strconv"

	"dsgd/internal/launcher"
	"dsgd/training/metrics"
)

// logStreams is what this process writes to: stderr, its log of
// warnings, notes and errors, with each line stamped (metrics.LogTimeLayout) and,
// for a rank other than 0 of a job a launcher started, prefixed with
// "[rank N] "; stdout, the progress and results, as it is (programs and
// scripts parse its lines, which carry their iteration numbers), and
// dropped for a rank other than 0: rank 0 reports the run, the others only
// their problems. A rank of dsgd's own --transport tcp launcher
// (DSGD_CHILD=1) writes plainly: the launcher stamps what it passes on.
// flush writes stderr's unfinished line.
func logStreams(stdout, stderr io.Writer, getenv func(string) string) (out, errw io.Writer, flush func()) {
	if getenv("DSGD_CHILD") == "1" {
		return stdout, stderr, func() {}
	}
	prefix := ""
	info, under, _ := launcher.Detect(getenv)
	if under && info.Size > 1 && info.Rank > 0 {
		prefix = "[rank " + strconv.Itoa(info.Rank) + "] "
		stdout = io.Discard
	}
	ew := metrics.NewStampWriter(stderr, prefix)
	return stdout, ew, func() { ew.Flush() }
}

// ownTerminal reports whether w is a terminal of this process's own, where
// a progress bar may be redrawn and escape codes written. Under a launcher
// (mpirun, srun, torchrun) it is not, even when it is a terminal: Open MPI
// gives each rank a pseudo-terminal whose output it interleaves with the
// other ranks'.
func ownTerminal(w io.Writer, getenv func(string) string) bool {
	if _, under, _ := launcher.Detect(getenv); under || getenv("DSGD_CHILD") == "1" {
		return false
	}
	return isTerminal(w)
}

// asksHelp reports whether the command line asks for the commands' or a
// command's help (or gives no command, which prints the commands).
func asksHelp(args []string) bool {
	if len(args) == 0 || args[0] == "help" {
		return true
	}
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}
