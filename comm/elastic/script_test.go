package elastic

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestCoordinatorScenarios runs the scripts under testdata/coordinator:
// the coordinator's rules driven without a network or a clock, every
// reply and log line printed. `go test ./comm/elastic -run
// CoordinatorScenarios -rewrite` regenerates them.
//
//	new min=N max=N want=N [server]
//	next NAME [gen=G] [done=D] [prefer=R] [server]   (gen: the member's last; default its own)
//	check NAME ITER
//	gone NAME        its connection ended
//	leave NAME       it finished the run
//	timeout          the armed timeout fires
//
// After each command come the log lines it caused and the replies that
// became ready, by member name: a place (generation, rank/size, the
// iteration it starts from, the source rank, the rendezvous), or an
// error.
func TestCoordinatorScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/coordinator", func(t *testing.T, path string) {
		var c *Coordinator
		var logs []string
		var fire func()
		waits := map[string]chan result{}
		gens := map[string]int{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "new" && c == nil {
				d.Fatalf(t, "%s before new", d.Cmd)
			}
			var b strings.Builder
			name := func() string {
				if len(d.CmdArgs) == 0 {
					d.Fatalf(t, "%s needs a member", d.Cmd)
				}
				return d.CmdArgs[0].Key
			}
			switch d.Cmd {
			case "new":
				cfg := Config{Timeout: time.Second}
				d.ScanArgs(t, "min", &cfg.Min)
				d.ScanArgs(t, "max", &cfg.Max)
				d.ScanArgs(t, "want", &cfg.Want)
				cfg.Server = d.HasArg("server")
				cfg.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
				if err := cfg.validate(); err != nil {
					return "error: " + err.Error() + "\n"
				}
				c = &Coordinator{cfg: cfg, members: map[any]*member{}, decided: map[int]bool{},
					after: func(_ time.Duration, f func()) func() bool {
						fire = f
						return func() bool { fire = nil; return true }
					}}
				clear(waits)
				clear(gens)
				return "ok\n"
			case "next":
				n := name()
				gen, done, prefer := gens[n], 0, -1
				d.MaybeScanArgs(t, "gen", &gen)
				d.MaybeScanArgs(t, "done", &done)
				d.MaybeScanArgs(t, "prefer", &prefer)
				c.mu.Lock()
				m, _ := c.member(n)
				ch, err := c.next(m, gen, done, prefer, d.HasArg("server"), n, "")
				c.mu.Unlock()
				if err != nil {
					fmt.Fprintf(&b, "%s: refused: %v\n", n, err)
				} else {
					waits[n] = ch
				}
			case "check":
				n := name()
				iter, err := strconv.Atoi(d.CmdArgs[1].Key)
				if err != nil {
					d.Fatalf(t, "check %s: iteration %q", n, d.CmdArgs[1].Key)
				}
				c.mu.Lock()
				m, _ := c.member(n)
				stop := c.check(m, gens[n], iter)
				c.mu.Unlock()
				fmt.Fprintf(&b, "%s: %s\n", n, map[bool]string{true: "re-form", false: "go on"}[stop])
			case "gone", "leave":
				n := name()
				c.mu.Lock()
				m, _ := c.member(n)
				if d.Cmd == "leave" {
					m.left = true
				} else {
					c.goneLocked(m)
				}
				c.mu.Unlock()
			case "timeout":
				if fire == nil {
					return "no timeout armed\n"
				}
				f := fire
				fire = nil
				f()
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			for _, l := range logs {
				fmt.Fprintf(&b, "log: %s\n", l)
			}
			logs = logs[:0]
			var names []string
			for n := range waits {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				select {
				case r := <-waits[n]:
					delete(waits, n)
					if r.err != nil {
						fmt.Fprintf(&b, "%s: error: %v\n", n, r.err)
						continue
					}
					p := r.place
					gens[n] = p.Gen
					fmt.Fprintf(&b, "%s: gen %d rank %d/%d from %d source %d rendezvous %s\n", n, p.Gen, p.Rank, p.Size, p.Done, p.Source, p.Rendezvous)
				default:
				}
			}
			if b.Len() == 0 {
				return "ok\n"
			}
			return b.String()
		})
	})
}
