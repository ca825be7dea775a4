package launch

import (
	"io"
	"strings"
	"testing"
)

// TestLiveLines: the launcher passes each rank's stderr lines on as they
// complete, prefixed with the rank, each text once however many ranks
// write it, and an unfinished last line at flush.
func TestLiveLines(t *testing.T) {
	var out strings.Builder
	l := newLiveLines(&out)
	r0, r1 := l.writer("rank 0"), l.writer("rank 1")
	io.WriteString(r1, "dsgd: warning: x.prototxt:2:3: ignoring solver_mode\npart")
	io.WriteString(r0, "dsgd: warning: x.prototxt:2:3: ignoring solver_mode\n")
	if got, want := out.String(), "[rank 1] dsgd: warning: x.prototxt:2:3: ignoring solver_mode\n"; got != want {
		t.Fatalf("after the first lines: %q, want %q", got, want)
	}
	io.WriteString(r1, "ial line\r\n\n")
	io.WriteString(r0, "dsgd worker: rank 0's closing error, which the launcher reports\ndsgd: interrupt: stopping after a snapshot (within 20s)\nrank 0 only\nno newline")
	l.flush()
	want := "[rank 1] dsgd: warning: x.prototxt:2:3: ignoring solver_mode\n[rank 1] partial line\n[rank 0] rank 0 only\n[rank 0] no newline\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

// TestInterruptedRanks: the ranks of a --transport tcp run stopped by a
// signal give one line: interrupted, with the snapshot and resume hint
// once, their other lines once each, and no "context canceled".
func TestInterruptedRanks(t *testing.T) {
	hint := "(snapshot of iteration 40 written to out/x_iter_40.dsgdsnap; continue with --resume out/x_iter_40.dsgdsnap)"
	warn := "dsgd: warning: solver.prototxt:5:1: ignoring solver_mode in solver: dsgd computes on the CPU"
	notice := "\ndsgd: interrupt: stopping after a snapshot (within 30s; signal again to exit at once)\n"
	for _, tc := range []struct {
		name string
		outs []string
		want string
	}{
		{"sync", []string{
			warn + "\n" + notice + "dsgd worker: context canceled " + hint + "\n",
			warn + "\n" + notice + "dsgd worker: context canceled\n",
		}, "interrupted " + hint + "\nrank 0: " + warn},
		{"children say interrupted", []string{
			notice + "dsgd worker: interrupted " + hint + "\n",
			notice + "dsgd worker: interrupted\n",
			notice + "dsgd worker: interrupted\n",
		}, "interrupted " + hint},
		{"no snapshot", []string{notice, notice + "dsgd worker: context canceled\n"}, "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := interruptedRanks(tc.outs).Error()
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProcessPath: rank 0 writes the path, rank N PATH.rankN, the center
// PATH.center whatever its rank.
func TestProcessPath(t *testing.T) {
	for _, tc := range []struct {
		rank   int
		center bool
		want   string
	}{{0, false, "t.json"}, {2, false, "t.json.rank2"}, {0, true, "t.json.center"}, {3, true, "t.json.center"}} {
		if got := ProcessPath("t.json", tc.rank, tc.center); got != tc.want {
			t.Errorf("rank %d center %v: %q, want %q", tc.rank, tc.center, got, tc.want)
		}
	}
}
