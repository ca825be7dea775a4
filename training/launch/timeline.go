package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"dsgd/internal/atomicfile"
	"dsgd/training/timeline"
)

// ProcessPath is where a process of a multi-process group writes a
// per-process file that the command names once (a trace, metrics): rank
// 0 the path itself, rank N PATH.rankN, and the center's server (a
// parameter server of an asynchronous scheme, rank 0 of no group)
// PATH.center, so that it never writes over rank 0's file. Run merges
// the traces so named.
func ProcessPath(path string, rank int, center bool) string {
	switch {
	case center:
		return path + ".center"
	case rank > 0:
		return fmt.Sprintf("%s.rank%d", path, rank)
	}
	return path
}

// mergeTimelines puts the traces that a --transport tcp job's processes
// wrote (PATH by rank 0, PATH.rankN, PATH.center) into one at PATH, each
// process a group of tracks on one clock, and removes the per-process
// files. A trace that cannot be read (a process killed while writing it)
// leaves every file as it is, with a warning naming it.
func mergeTimelines(path string, world int, center bool, stderr io.Writer) {
	type file struct {
		name, path string
		pid        int
	}
	files := []file{{"rank 0", path, 0}}
	for r := 1; r < world; r++ {
		files = append(files, file{"rank " + strconv.Itoa(r), ProcessPath(path, r, false), r})
	}
	if center {
		files = append(files, file{"center", ProcessPath(path, 0, true), world})
	}
	var parts []timeline.Part
	var used []string
	for _, fl := range files {
		data, err := os.ReadFile(fl.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "dsgd: warning: --timeline: %v; the per-process traces are left unmerged\n", err)
			return
		}
		parts = append(parts, timeline.Part{Name: fl.name, Pid: fl.pid, R: bytes.NewReader(data)})
		used = append(used, fl.path)
	}
	if len(parts) < 2 {
		return
	}
	// A rank that died (an elastic group goes on without it) left its
	// trace cut short: its events up to then are merged.
	var notes []string
	err := atomicfile.Write(path, 0o644, func(w io.Writer) (err error) {
		notes, err = timeline.MergeNotes(w, parts)
		return err
	})
	if err != nil {
		fmt.Fprintf(stderr, "dsgd: warning: --timeline: %v; the per-process traces (%s) are left unmerged\n", err, strings.Join(used, ", "))
		return
	}
	for _, u := range used[1:] {
		os.Remove(u)
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "dsgd: timeline: %s\n", n)
	}
	fmt.Fprintf(stderr, "dsgd: timeline: %d processes' traces merged into %s, one process per rank on one clock\n", len(used), path)
}
