package spawn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain makes the test binary its own child: with SPAWN_TEST_CHILD set
// it acts out the role named by its arguments instead of running tests.
func TestMain(m *testing.M) {
	if os.Getenv("SPAWN_TEST_CHILD") == "1" {
		os.Exit(child(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// child roles: "exit N"; "sleep D" (exit 0 after D, 7 on SIGTERM);
// "stubborn D" (ignores SIGTERM, sleeps D); "stdin" (exit 5 at stdin's
// end of file); "echo TEXT" (TEXT on stdout, exit 0).
func child(args []string) int {
	switch args[0] {
	case "exit":
		n, _ := strconv.Atoi(args[1])
		fmt.Fprintf(os.Stderr, "exiting %d\n", n)
		return n
	case "sleep", "stubborn":
		d, _ := time.ParseDuration(args[1])
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		fmt.Println("ready")
		select {
		case <-ch:
			if args[0] == "sleep" {
				return 7
			}
			time.Sleep(d)
		case <-time.After(d):
		}
		return 0
	case "stdin":
		io.Copy(io.Discard, os.Stdin)
		return 5
	case "echo":
		fmt.Print(args[1])
		return 0
	}
	return 99
}

func procs(roles ...string) []Proc {
	var out []Proc
	for i, r := range roles {
		out = append(out, Proc{Name: fmt.Sprintf("child %d", i), Args: strings.Fields(r), Env: append(os.Environ(), "SPAWN_TEST_CHILD=1")})
	}
	return out
}

func status(e Exit) int {
	var ee *exec.ExitError
	if e.Err == nil {
		return 0
	}
	if errors.As(e.Err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ws.Signal() == syscall.SIGTERM {
				return 7 // stopped before its handler was installed
			}
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1000
}

// TestGroup: how a group ends under each stopping rule. want is each
// child's exit status (negative: killed by that signal) and whether the
// group stopped it.
func TestGroup(t *testing.T) {
	term := func() os.Signal { return syscall.SIGTERM }
	cases := []struct {
		name   string
		roles  []string
		o      Options
		cancel time.Duration // cancel the context this long after Start (0: never)
		want   []int
		stop   []bool
		within time.Duration
	}{
		{"all succeed", []string{"exit 0", "sleep 10ms"}, Options{Linger: 0}, 0, []int{0, 0}, []bool{false, false}, 20 * time.Second},
		{"a failure kills the rest", []string{"exit 3", "sleep 1m"}, Options{Linger: 0}, 0, []int{3, -int(syscall.SIGKILL)}, []bool{false, true}, 20 * time.Second},
		{"a failure stops the rest with Stop's signal", []string{"sleep 1m", "exit 4"}, Options{Linger: 100 * time.Millisecond, Stop: term}, 0, []int{7, 4}, []bool{true, false}, 20 * time.Second},
		{"independent: a failure stops none", []string{"exit 3", "sleep 1500ms"}, Options{Linger: -1}, 0, []int{3, 0}, []bool{false, false}, 20 * time.Second},
		{"context ends: Stop's signal", []string{"sleep 1m", "sleep 1m"}, Options{Linger: -1, Stop: term}, 300 * time.Millisecond, []int{7, 7}, []bool{true, true}, 20 * time.Second},
		{"grace runs out: killed", []string{"stubborn 1m"}, Options{Stop: term, Grace: 300 * time.Millisecond}, 300 * time.Millisecond, []int{-int(syscall.SIGKILL)}, []bool{true}, 20 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			t0 := time.Now()
			ps := procs(c.roles...)
			// Cancel only once every sleeper has its handler installed.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for i := range ps {
				ps[i].Stdout = w
			}
			g, err := Start(ctx, ps, c.o)
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if c.cancel > 0 {
				br := bufio.NewReader(r)
				for _, role := range c.roles {
					if strings.HasPrefix(role, "exit") {
						continue
					}
					if _, err := br.ReadString('\n'); err != nil {
						t.Fatalf("waiting for the children: %v", err)
					}
				}
				time.AfterFunc(c.cancel, cancel)
			}
			go io.Copy(io.Discard, r)
			exits := g.Wait()
			if d := time.Since(t0); d > c.within {
				t.Errorf("took %v", d)
			}
			for i, e := range exits {
				if got := status(e); got != c.want[i] || e.Stopped != c.stop[i] {
					t.Errorf("child %d (%s): status %d stopped %v (%v), want %d stopped %v", i, c.roles[i], got, e.Stopped, e.Err, c.want[i], c.stop[i])
				}
			}
			if Failed(exits) != (c.want[0] != 0 || len(c.want) > 1 && c.want[1] != 0) {
				t.Errorf("Failed(%v) = %v", exits, Failed(exits))
			}
			select {
			case <-g.Done():
			default:
				t.Error("Done not closed after Wait")
			}
		})
	}
}

func TestOutputAndStop(t *testing.T) {
	var out bytes.Buffer
	p := procs("echo hello")
	p[0].Stdout = &out
	g, err := Start(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if exits := g.Wait(); out.String() != "hello" || exits[0].Err != nil || exits[0].Stopped {
		t.Errorf("output %q, exits %+v", out.String(), exits)
	}
	g, err = Start(context.Background(), procs("sleep 1m"), Options{Stop: func() os.Signal { return syscall.SIGTERM }})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	g.Stop()
	if exits := g.Wait(); status(exits[0]) != 7 || !exits[0].Stopped {
		t.Errorf("exits %+v", exits)
	}
}

// TestHoldStdin: the child's stdin stays open while it runs (it does not
// see end of file until the group is stopped and it is killed).
func TestHoldStdin(t *testing.T) {
	p := procs("stdin")
	p[0].HoldStdin = true
	g, err := Start(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Done():
		t.Fatalf("the child saw end of file while its parent lived: %+v", g.Wait())
	case <-time.After(500 * time.Millisecond):
	}
	g.Stop()
	if e := g.Wait()[0]; status(e) != -int(syscall.SIGKILL) {
		t.Errorf("exit %+v", e)
	}
}

func TestStartFailure(t *testing.T) {
	_, err := Start(context.Background(), procs("exit 0"), Options{Exe: "/nonexistent/dsgd"})
	if err == nil || !strings.Contains(err.Error(), "starting child 0") {
		t.Fatalf("got %v", err)
	}
}

func TestLoopbackAddrs(t *testing.T) {
	a, err := LoopbackAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || a[0] == a[1] || a[1] == a[2] || a[0] == a[2] || !strings.HasPrefix(a[0], "127.0.0.1:") {
		t.Errorf("%v", a)
	}
}
