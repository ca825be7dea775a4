package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dsgd/internal/syncbuf"
	"dsgd/servers/ps"
	"dsgd/servers/redisstore"
)

// child is this test binary started as a dsgd process.
type child struct {
	name string
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{} // closed once it has exited; err is set then
	err  error
}

// startChild runs `dsgd args...` in dir; the test's end kills it if it
// still runs.
func startChild(t *testing.T, dir, name string, args ...string) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{name: name, cmd: exec.Command(exe, args...), out: &syncbuf.Buffer{}, done: make(chan struct{})}
	c.cmd.Dir, c.cmd.Env = dir, append(os.Environ(), "DSGD_CHILD=1")
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

func (c *child) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// wait waits for the child to exit and fails the test unless it exits 0.
func (c *child) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(limit):
		t.Fatalf("%s still runs after %v; output:\n%s", c.name, limit, c.out)
	}
	if c.err != nil {
		t.Fatalf("%s: %v; output:\n%s", c.name, c.err, c.out)
	}
}

// kill stops the child with SIGKILL, as a crash would.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatalf("killing %s: %v", c.name, err)
	}
	<-c.done
}

// metricsIters returns the iterations of the complete lines of a
// --metrics file (a killed process may leave half a line).
func metricsIters(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var its []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m struct{ Iter int }
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			its = append(its, m.Iter)
		}
	}
	return its
}

// TestKilledWorkerRejoins: in async, ssp and seasgd across processes, a
// worker killed mid-run (SIGKILL) does not stop the others, which finish
// their iterations, nor the server, which goes on serving; the worker,
// restarted, joins again and continues from the count it had reached.
func TestKilledWorkerRejoins(t *testing.T) {
	const iters = 200
	cases := []struct {
		scheme string
		extra  []string
	}{
		{"async", nil},
		{"ssp", []string{"--staleness", "2"}},
		{"easgd", nil},
		{"seasgd", nil},
	}
	for _, c := range cases {
		t.Run(c.scheme, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "net.prototxt", tinyNet)
			write(t, dir, "solver.prototxt", tinySolver)
			addr, err := freeLoopbackAddr()
			if err != nil {
				t.Fatal(err)
			}
			const tok = "fault-test"
			model := append([]string{"--scheme", c.scheme, "--solver", "solver.prototxt", "--iters", strconv.Itoa(iters),
				"--threads", "1", "--snapshot-prefix", "none", "--test-interval", "0", "--comm-timeout", "30s"}, c.extra...)
			var server *child
			centerAddr := addr
			if c.scheme == "seasgd" {
				server = startChild(t, dir, "smb", "smb", "--listen", addr, "--token", tok)
				centerAddr = "smb://" + addr
			} else {
				server = startChild(t, dir, "ps", append([]string{"ps", "--workers", "3", "--listen", addr, "--token", tok}, model...)...)
			}
			worker := func(rank int, extra ...string) *child {
				args := append([]string{"worker", "--rank", strconv.Itoa(rank), "--world", "3", "--center", centerAddr, "--token", tok}, model...)
				return startChild(t, dir, fmt.Sprintf("worker %d", rank), append(args, extra...)...)
			}
			// Worker 1 is slowed down (20 ms an iteration, some 4 s in
			// all) so that it is surely killed mid-run.
			w0 := worker(0)
			w1 := worker(1, "--straggle", "1:20ms", "--metrics", "first.jsonl")
			w2 := worker(2)

			// Its --metrics file is buffered: once something is in it,
			// worker 1 has done a good number of iterations.
			first := filepath.Join(dir, "first.jsonl.rank1")
			deadline := time.Now().Add(30 * time.Second)
			for {
				if st, err := os.Stat(first); err == nil && st.Size() > 0 {
					break
				}
				if !w1.running() {
					t.Fatalf("worker 1 exited before it could be killed: %v\n%s", w1.err, w1.out)
				}
				if time.Now().After(deadline) {
					t.Fatalf("worker 1 wrote no metrics in 30s:\n%s\nserver:\n%s", w1.out, server.out)
				}
				time.Sleep(10 * time.Millisecond)
			}
			w1.kill(t)
			seen := metricsIters(t, first)
			if len(seen) == 0 || seen[len(seen)-1] >= iters-1 {
				t.Fatalf("worker 1 was not killed mid-run: iterations %v", seen)
			}
			reached := seen[len(seen)-1]
			t.Logf("worker 1 killed past iteration %d", reached)

			// The others finish, and the server still serves.
			w0.wait(t, 60*time.Second)
			w2.wait(t, 60*time.Second)
			if !strings.Contains(w0.out.String(), fmt.Sprintf("done: %d iterations (from 0)", iters)) {
				t.Errorf("worker 0 did not run its %d iterations:\n%s", iters, w0.out)
			}
			if !server.running() {
				t.Fatalf("the server stopped with worker 1 dead: %v\n%s", server.err, server.out)
			}

			// Worker 1, restarted, continues past the count it reached.
			w1 = worker(1, "--metrics", "second.jsonl")
			w1.wait(t, 60*time.Second)
			again := metricsIters(t, filepath.Join(dir, "second.jsonl.rank1"))
			if len(again) == 0 || again[0] <= reached || again[len(again)-1] != iters-1 {
				t.Fatalf("restarted worker 1 ran iterations %v; want from past %d to %d", again, reached, iters-1)
			}
			t.Logf("worker 1 restarted at iteration %d", again[0])
			if c.scheme == "seasgd" {
				if !server.running() {
					t.Fatalf("the shared buffer server stopped: %v\n%s", server.err, server.out)
				}
				return // it serves until stopped; the cleanup kills it
			}
			// The parameter server stops once every worker finished, and
			// said that worker 1 left without a word.
			server.wait(t, 30*time.Second)
			for _, want := range []string{"worker 1's connection", "closed without a leave", "ps: done:"} {
				if !strings.Contains(server.out.String(), want) {
					t.Errorf("server output lacks %q:\n%s", want, server.out)
				}
			}
		})
	}
}

// startRedisServer starts redis-server on a free loopback port with no
// persistence, waits until it answers and kills it at the test's end. It
// skips the test where redis-server is not installed.
func startRedisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (Debian redis-server)")
	}
	dir := t.TempDir()
	for range 5 {
		addr, err := freeLoopbackAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no")
		var out syncbuf.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() { cmd.Process.Kill(); <-exited }
		url := "redis://" + addr
		ping := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			c, err := redisstore.Dial(ctx, url, redisstore.Config{Timeout: time.Second})
			if err != nil {
				return err
			}
			defer c.Close()
			return c.Ping(ctx)
		}
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			select {
			case <-exited:
				end = time.Time{} // the port was taken: try another
				continue
			default:
			}
			if ping() == nil {
				t.Cleanup(stop)
				return url
			}
		}
		stop() // the port was taken, or it is slow: try another
	}
	t.Fatal("redis-server did not answer on 5 ports")
	return ""
}

// TestTrainThroughRedis runs async across processes with the weights
// carried through Redis (--store): the run succeeds and leaves the center
// weights, and each worker's last delta, in Redis.
func TestTrainThroughRedis(t *testing.T) {
	url := startRedisServer(t)
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--transport", "tcp", "--workers", "2", "--scheme", "async",
		"--store", url, "--job", "t1", "--iters", "30", "--threads", "1", "--snapshot-prefix", "none", "--comm-timeout", "30s")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "done: 30 iterations") {
		t.Errorf("output lacks the summary:\n%s", out)
	}
	m := regexp.MustCompile(`net \S+, (\d+) parameters`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output lacks the parameter count:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	ctx := context.Background()
	c, err := redisstore.Dial(ctx, url, redisstore.Config{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const suffix = ":t1" // the job's name in every key (--job)
	for _, key := range []string{ps.WeightsKey + suffix, ps.DeltaKey(0) + suffix, ps.DeltaKey(1) + suffix} {
		b, err := c.Get(ctx, key)
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		if len(b) != 4*n {
			t.Errorf("%s holds %d bytes, want %d (%d float32s)", key, len(b), 4*n, n)
		}
	}
	w := make([]float32, n)
	if err := redisstore.NewStore(c).GetFloats(ctx, ps.WeightsKey+suffix, w); err != nil {
		t.Fatal(err)
	}
	nonzero := 0
	for _, v := range w {
		if v != 0 {
			nonzero++
		}
	}
	if nonzero == 0 {
		t.Errorf("%s holds only zeros", ps.WeightsKey)
	}
}
