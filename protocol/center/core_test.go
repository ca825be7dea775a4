package center

import (
	"fmt"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestCoreImportsNoClock: the core is pure: no clock, lock, context or
// I/O; time reaches it only as ticks.
func TestCoreImportsNoClock(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "core.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"fmt": true, "slices": true}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if !allowed[p] {
			t.Errorf("core.go imports %s; the core takes requests and ticks, nothing else", p)
		}
	}
}

// TestCoreScenarios runs the scripts under testdata/core: request
// sequences fed to a Core, with every output printed. `go test ./center
// -run CoreScenarios -rewrite` regenerates them.
//
//	new workers=W [policy=fcfs|round-robin|hogwild] [interval=H]
//	    [finish=own|master|first|average] [max=M] [start=S] [deadline=D]
//	step [now=T]      one request a line, each given the next tag tN:
//	    join W | pull W | push W | elastic W | round W ITER | closed W ITER
//	    clock W ITER [S] | leave W [finished] | refuse OP W REASON...
//	tick now=T
//	observe            one worker a line: W COUNT active|left
//	cancel tN
//	state
func TestCoreScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/core", func(t *testing.T, path string) {
		var c *Core
		var tag int64
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "new" && c == nil {
				d.Fatalf(t, "%s before new", d.Cmd)
			}
			var b strings.Builder
			switch d.Cmd {
			case "new":
				cfg := CoreConfig{}
				var policy, finish string
				d.ScanArgs(t, "workers", &cfg.Workers)
				d.MaybeScanArgs(t, "policy", &policy)
				d.MaybeScanArgs(t, "interval", &cfg.Interval)
				d.MaybeScanArgs(t, "finish", &finish)
				d.MaybeScanArgs(t, "max", &cfg.MaxIter)
				d.MaybeScanArgs(t, "start", &cfg.StartIter)
				d.MaybeScanArgs(t, "deadline", &cfg.Deadline)
				for _, p := range []Policy{FCFS, RoundRobin, Hogwild} {
					if policy == p.String() {
						cfg.Policy = p
					}
				}
				if finish != "" {
					f, err := ParseFinish(finish)
					if err != nil {
						d.Fatalf(t, "%v", err)
					}
					cfg.Finish = f
				}
				var err error
				if c, err = NewCore(cfg); err != nil {
					return "error: " + err.Error() + "\n"
				}
				tag = 0
				return "ok\n"
			case "step":
				var now int64
				d.MaybeScanArgs(t, "now", &now)
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					tag++
					r := parseRequest(t, d, line)
					r.Tag = tag
					fmt.Fprintf(&b, "t%d %s\n", tag, line)
					printOutputs(&b, c.Step(now, r))
				}
			case "tick":
				var now int64
				d.ScanArgs(t, "now", &now)
				printOutputs(&b, c.Tick(now))
			case "observe":
				ctl := Control{Clocks: append([]int(nil), c.ctl.Clocks...), Active: append([]bool(nil), c.ctl.Active...)}
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					if len(f) != 3 || (f[2] != "active" && f[2] != "left") {
						d.Fatalf(t, "observe %q: want W COUNT active|left", line)
					}
					w, err1 := strconv.Atoi(f[0])
					n, err2 := strconv.Atoi(f[1])
					if err1 != nil || err2 != nil || w < 0 || w >= len(ctl.Clocks) {
						d.Fatalf(t, "observe %q: bad worker or count", line)
					}
					ctl.Clocks[w], ctl.Active[w] = n, f[2] == "active"
				}
				printOutputs(&b, c.Observe(ctl))
			case "cancel":
				n, err := strconv.ParseInt(strings.TrimPrefix(d.CmdArgs[0].Key, "t"), 10, 64)
				if err != nil {
					d.Fatalf(t, "cancel %s: %v", d.CmdArgs[0].Key, err)
				}
				c.Cancel(n)
				return "ok\n"
			case "state":
				st := c.Stats()
				fmt.Fprintf(&b, "clocks %v active %v round %d turn %d\n", c.ctl.Clocks, c.ctl.Active, c.round, c.turn)
				fmt.Fprintf(&b, "waiting: turn %s round %s closed %s clock %s\n", tags(c.turnW), tags(c.roundW), tags(c.closedW), tags(c.clockW))
				fmt.Fprintf(&b, "stats: pulls %d pushes %d exchanges %d rounds %d dropped %d waits %d refused %d lead %d finished %v\n",
					st.Pulls, st.Pushes, st.Exchanges, st.Rounds, st.Dropped, st.Waits, st.Refused, st.MaxLead, c.Finished())
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return b.String()
		})
	})
}

func tags(rs []Request) string {
	if len(rs) == 0 {
		return "-"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("t%d", r.Tag)
	}
	return strings.Join(s, ",")
}

func parseRequest(t *testing.T, d *datadriven.TestData, line string) Request {
	f := strings.Fields(line)
	num := func(i int) int {
		if i >= len(f) {
			d.Fatalf(t, "%q: want a number in field %d", line, i+1)
		}
		n, err := strconv.Atoi(f[i])
		if err != nil {
			d.Fatalf(t, "%q: %v", line, err)
		}
		return n
	}
	if len(f) < 2 {
		d.Fatalf(t, "%q: want OP WORKER ...", line)
	}
	r := Request{S: -1}
	switch f[0] {
	case "join":
		r.Op = OpJoin
	case "pull":
		r.Op = OpPull
	case "push":
		r.Op = OpPush
	case "elastic":
		r.Op = OpElastic
	case "round":
		r.Op, r.Iter = OpRound, num(2)
	case "closed":
		r.Op, r.Iter = OpClosed, num(2)
	case "clock":
		r.Op, r.Iter = OpClock, num(2)
		if len(f) > 3 {
			r.S = num(3)
		}
	case "leave":
		r.Op, r.Finished = OpLeave, len(f) > 2 && f[2] == "finished"
	case "refuse":
		// refuse OP W REASON...: an update the data plane found wrong.
		rr := parseRequest(t, d, strings.Join(f[1:3], " ")+" 0")
		rr.Refuse = strings.Join(f[3:], " ")
		return rr
	default:
		d.Fatalf(t, "%q: unknown operation", line)
	}
	r.W = num(1)
	return r
}

func printOutputs(b *strings.Builder, outs []Output) {
	for _, o := range outs {
		switch o.Kind {
		case Grant:
			fmt.Fprintf(b, "  grant t%d %v w%d", o.Tag, o.Op, o.W)
			if o.Op == OpPush || o.Op == OpRound {
				fmt.Fprintf(b, " iter=%d", o.Iter)
			}
		case Reply:
			fmt.Fprintf(b, "  reply t%d %v w%d", o.Tag, o.Op, o.W)
			switch {
			case o.Err != nil:
				fmt.Fprintf(b, " error: %v", o.Err)
			case o.Op == OpJoin:
				fmt.Fprintf(b, " iter=%d", o.Iter)
			case o.Op == OpRound || o.Op == OpClosed:
				fmt.Fprintf(b, " next=%d", o.Iter)
				if o.Dropped {
					b.WriteString(" dropped")
				}
			case o.Op == OpClock && o.Stop:
				b.WriteString(" stop")
			}
		case Close:
			fmt.Fprintf(b, "  close round %d with %d", o.Iter, o.N)
		case Timer:
			fmt.Fprintf(b, "  timer at %d", o.At)
		}
		b.WriteString("\n")
	}
}

// TestCoreStaleness: an update's staleness is the number of updates the
// center took since its worker last read the center (pull,
// exchange or join); an exchange both reads and updates.
func TestCoreStaleness(t *testing.T) {
	c, err := NewCore(CoreConfig{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var tag int64
	step := func(op Op, w int) {
		tag++
		c.Step(0, Request{Tag: tag, Op: op, W: w, S: -1})
	}
	for w := range 3 {
		step(OpJoin, w)
	}
	step(OpPull, 0)
	step(OpPull, 1)
	step(OpPush, 0)    // 0: nothing since w0's pull
	step(OpPush, 1)    // 1: w0's push
	step(OpPush, 2)    // 2: both, since w2 joined
	step(OpPull, 0)    // w0 reads version 3
	step(OpElastic, 1) // 3: three pushes (its own among them) since its pull
	step(OpPush, 0)    // 1: w1's exchange
	step(OpElastic, 1) // 1: w0's push since w1's exchange
	st := c.Stats()
	if st.StaleN != 6 || st.Stale != 0+1+2+3+1+1 || st.MaxStale != 3 {
		t.Fatalf("staleness: %d updates, sum %d, max %d; want 6, 8, 3", st.StaleN, st.Stale, st.MaxStale)
	}
	if m := st.MeanStale(); m != 8.0/6 {
		t.Errorf("mean staleness %v, want %v", m, 8.0/6)
	}
}
