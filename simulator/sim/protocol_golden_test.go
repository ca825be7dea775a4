package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"dsgd/protocol/scheme"
)

// TestProtocolGoldens: every scheme's protocol, several ranks at once, as
// golden scripts under testdata/protocols. The simulator is the
// deterministic harness: it runs the schemes' real programs in virtual
// time (no goroutines racing, no sleeps), so each script prints what
// every rank does and when, the same on every machine. A change to a
// scheme's order of operations shows as a diff here;
// `go test ./simulator/sim -run ProtocolGoldens -rewrite` regenerates them.
//
//	run scheme=NAME workers=W iters=N [layers=L] [interval=H] [staleness=S]
//	    [groups=G] [variant=V] [fragments=P] [alpha=A]
//
// The model is L equal layers (default 2) of 1,000 parameters each and
// 3 ms of compute, over 10GbE. Output: one line per span, by start time
// then rank: "t=START_us rN CAT NAME (DUR_us)"; compute spans are left
// out beyond each rank's first iteration so that communication stands
// out.
func TestProtocolGoldens(t *testing.T) {
	datadriven.Walk(t, "testdata/protocols", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "run" {
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return runProtocol(t, d)
		})
	})
}

func runProtocol(t *testing.T, d *datadriven.TestData) string {
	sc := scheme.Config{Pack: true}
	iters, layers := 2, 2
	for _, a := range d.CmdArgs {
		if len(a.Vals) != 1 {
			d.Fatalf(t, "%s: want one value", a.Key)
		}
		v := a.Vals[0]
		num := func() int {
			n, err := strconv.Atoi(v)
			if err != nil {
				d.Fatalf(t, "%s=%s: %v", a.Key, v, err)
			}
			return n
		}
		switch a.Key {
		case "scheme":
			sc.Name = v
		case "workers":
			sc.Workers = num()
		case "iters":
			iters = num()
		case "layers":
			layers = num()
		case "interval":
			sc.Interval = num()
		case "staleness":
			sc.Staleness = num()
		case "groups":
			sc.Groups = num()
		case "variant":
			sc.Variant = num()
		case "fragments":
			sc.Fragments = num()
		case "alpha":
			f, err := strconv.ParseFloat(v, 32)
			if err != nil {
				d.Fatalf(t, "alpha=%s: %v", v, err)
			}
			sc.Alpha = float32(f)
		default:
			d.Fatalf(t, "unknown argument %s", a.Key)
		}
	}
	type line struct {
		start time.Duration
		rank  int
		text  string
	}
	var lines []line
	computes := map[int]int{}
	cfg := Config{Scheme: sc, Model: Layered(1000*layers, 3*time.Millisecond, layers), Network: Presets["10gbe"], Iters: iters, Warmup: -1,
		Trace: func(ev TraceEvent) {
			if ev.Cat == "compute" {
				if ev.Name == "forward" {
					computes[ev.Rank]++
				}
				if computes[ev.Rank] > 1 {
					return
				}
			}
			lines = append(lines, line{ev.Start, ev.Rank, fmt.Sprintf("t=%d r%d %s %s (%d)", ev.Start.Microseconds(), ev.Rank, ev.Cat, ev.Name, ev.Dur.Microseconds())})
		}}
	res, err := Run(cfg)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	sort.SliceStable(lines, func(i, j int) bool {
		if lines[i].start != lines[j].start {
			return lines[i].start < lines[j].start
		}
		return lines[i].rank < lines[j].rank
	})
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "iteration %d us, compute %d us, comm %d us, wait %d us\n",
		res.Iter.Microseconds(), res.Compute.Microseconds(), res.Comm.Microseconds(), res.Wait.Microseconds())
	return b.String()
}
