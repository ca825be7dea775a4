package redisstore

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"dsgd/internal/spawn"
)

// redisServer is a redis-server process started for one test.
type redisServer struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and been reaped
}

// url returns the store URL of the server.
func (s *redisServer) url() string { return "redis://" + s.addr }

// kill stops the server at once (SIGKILL) and waits for it to exit. It
// may be called more than once.
func (s *redisServer) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// startRedis starts redis-server on a free loopback port, with no
// persistence and its files in a temporary directory, waits until it
// answers PING and kills it when the test ends. It fails the test if
// redis-server is not installed: the weight store cannot be tested
// without it.
func startRedis(tb testing.TB, extra ...string) *redisServer {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server is not installed; the Redis weight store cannot be tested without it: install it with `apt-get install -y redis-server` (%v)", err)
	}
	dir := tb.TempDir()
	var lastLog []byte
	for attempt := range 5 {
		port := freePort(tb)
		logPath := filepath.Join(dir, "redis-"+strconv.Itoa(attempt)+".log")
		args := append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", logPath, "--daemonize", "no",
		}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start redis-server: %v", err)
		}
		s := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, exited: make(chan struct{})}
		go func() { cmd.Wait(); close(s.exited) }()
		if waitPing(s.addr, s.exited, 10*time.Second) {
			tb.Cleanup(s.kill)
			return s
		}
		s.kill()
		lastLog, _ = os.ReadFile(logPath)
	}
	tb.Fatalf("redis-server did not answer PING in 5 attempts; last log:\n%s", lastLog)
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago, from
// outside the ephemeral ports, so that no other socket takes it before
// redis-server binds it (spawn.LoopbackAddrs).
func freePort(tb testing.TB) int {
	tb.Helper()
	a, err := spawn.LoopbackAddrs(1)
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	_, p, _ := net.SplitHostPort(a[0])
	port, err := strconv.Atoi(p)
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	return port
}

// waitPing polls addr with an inline PING until the server answers
// (+PONG, or -NOAUTH when it wants a password), the process exits or
// the time is up.
func waitPing(addr string, exited <-chan struct{}, limit time.Duration) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			c.Write([]byte("PING\r\n"))
			line, _ := bufio.NewReader(c).ReadBytes('\n')
			c.Close()
			if bytes.HasPrefix(line, []byte("+PONG")) || bytes.HasPrefix(line, []byte("-NOAUTH")) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
