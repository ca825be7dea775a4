package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestShardedParameterServer: two dsgd ps processes each serve half of
// the parameters (--shard 0/2, 1/2) and two async workers train against
// both (--center A,B), as FireCaffe 6.1's pool of parameter servers. The
// shards' sizes add up to the model, both see every worker's pushes, and
// both stop once the workers are done.
func TestShardedParameterServer(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	const tok, iters = "shard-test", 40
	model := []string{"--scheme", "async", "--solver", "solver.prototxt", "--iters", strconv.Itoa(iters),
		"--threads", "1", "--snapshot-prefix", "none", "--test-interval", "0", "--comm-timeout", "30s"}
	addrs, err := freeLoopbackAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	var servers []*child
	for i, addr := range addrs {
		args := append([]string{"ps", "--workers", "2", "--listen", addr, "--token", tok, "--shard", fmt.Sprintf("%d/2", i)}, model...)
		servers = append(servers, startChild(t, dir, fmt.Sprintf("ps %d", i), args...))
	}
	var workers []*child
	for r := 0; r < 2; r++ {
		args := append([]string{"worker", "--rank", strconv.Itoa(r), "--world", "2", "--center", strings.Join(addrs, ","), "--token", tok}, model...)
		workers = append(workers, startChild(t, dir, fmt.Sprintf("worker %d", r), args...))
	}
	for _, w := range workers {
		w.wait(t, 60*time.Second)
	}
	if !strings.Contains(workers[0].out.String(), fmt.Sprintf("done: %d iterations", iters)) {
		t.Fatalf("worker 0 did not finish:\n%s", workers[0].out)
	}
	serving := regexp.MustCompile(`ps: serving (\d+) parameters`)
	pushes := regexp.MustCompile(`ps: done: \d+ pulls, (\d+) pushes`)
	total := 0
	for i, s := range servers {
		s.wait(t, 30*time.Second)
		out := s.out.String()
		m := serving.FindStringSubmatch(out)
		p := pushes.FindStringSubmatch(out)
		if m == nil || p == nil {
			t.Fatalf("shard %d output lacks its size or its count:\n%s", i, out)
		}
		n, _ := strconv.Atoi(m[1])
		total += n
		if got, _ := strconv.Atoi(p[1]); got != 2*iters {
			t.Errorf("shard %d took %d pushes, want %d (every worker's every iteration)", i, got, 2*iters)
		}
	}
	if want := regexp.MustCompile(`(\d+) parameters`).FindStringSubmatch(workers[0].out.String()); want == nil || strconv.Itoa(total) != want[1] {
		t.Errorf("the shards hold %d parameters in all; worker 0 says %v", total, want)
	}
}

// TestShardFlag: a bad --shard is refused naming the flag.
func TestShardFlag(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, bad := range []string{"2/2", "x", "-1/3", "0/0"} {
		c := startChild(t, dir, "ps", "ps", "--scheme", "async", "--workers", "2", "--solver", "solver.prototxt", "--listen", "127.0.0.1:0", "--shard", bad)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("--shard %s: still running", bad)
		}
		if c.err == nil || !strings.Contains(c.out.String(), "--shard") {
			t.Errorf("--shard %s: err %v, output:\n%s", bad, c.err, c.out)
		}
	}
}
