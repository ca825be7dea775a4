package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for a server and a client run
// inside the namespaces.
func TestMain(m *testing.M) {
	switch os.Getenv("NETNS_HELPER") {
	case "serve": // accept one connection on $ADDR, read it to EOF, print the byte count
		ln, err := net.Listen("tcp", os.Getenv("ADDR"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("listening")
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		n, _ := io.Copy(io.Discard, c)
		fmt.Println(n)
		os.Exit(0)
	case "send": // send $BYTES to $ADDR, print the seconds it took
		var c net.Conn
		var err error
		for range 100 {
			if c, err = net.Dial("tcp", os.Getenv("ADDR")); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		n, _ := strconv.Atoi(os.Getenv("BYTES"))
		t0 := time.Now()
		if _, err := c.Write(make([]byte, n)); err != nil {
			os.Exit(1)
		}
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, c) // wait for the server's close: all bytes landed
		fmt.Println(time.Since(t0).Seconds())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newPair(t *testing.T, rate float64) *Pair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := NewPair(ctx, "dsgd", rate)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("cannot make network namespaces here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// TestPairRate: 4 MB sent from host 1 to host 0 over a 100 Mbit/s pair
// take at least what the rate allows, every byte arrives, and the
// kernel's counters on the sender's end saw them go through tbf.
func TestPairRate(t *testing.T) {
	const rate, n = 100e6, 4 << 20
	p := newPair(t, rate)
	for h, ns := range p.NS {
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			t.Fatalf("host %d: %v", h, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exe, _ := os.Executable()
	addr := net.JoinHostPort(p.Addr[0], "5001")
	srv := p.Command(ctx, 0, exe)
	srv.Env = append(os.Environ(), "NETNS_HELPER=serve", "ADDR="+addr)
	var srvOut strings.Builder
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	cli := p.Command(ctx, 1, exe)
	cli.Env = append(os.Environ(), "NETNS_HELPER=send", "ADDR="+addr, "BYTES="+strconv.Itoa(n))
	out, err := cli.CombinedOutput()
	if err != nil {
		t.Fatalf("sender: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v\n%s", err, srvOut.String())
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("sender said %q", out)
	}
	if !strings.Contains(srvOut.String(), "\n"+strconv.Itoa(n)+"\n") {
		t.Fatalf("server received: %q, want %d bytes", srvOut.String(), n)
	}
	floor := float64(n-p.Burst) * 8 / rate
	t.Logf("%d bytes in %.3f s: %.1f Mbit/s over a %.0f Mbit/s link (floor %.3f s)", n, secs, float64(n)*8/secs/1e6, rate/1e6, floor)
	if secs < floor {
		t.Errorf("%d bytes crossed in %.3f s, faster than %.0f Mbit/s allows (%.3f s): tbf is not limiting", n, secs, rate/1e6, floor)
	}
	c, err := p.Counters(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("host 1's end: %+v", c)
	if c.QdiscKind != "tbf" || c.TxBytes < n || c.QdiscBytes < n || c.Overlimits == 0 {
		t.Errorf("host 1's end: %+v, want tbf to have sent at least %d bytes and held some back", c, n)
	}
}

// TestRemoveStale: a namespace left by a process that is gone is
// removed; one of a live process, or of another prefix, is not.
func TestRemoveStale(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no true command")
	}
	pid := dead.Process.Pid
	ctx := context.Background()
	stale := fmt.Sprintf("dsgdstale-%d-1-a", pid)
	live := fmt.Sprintf("dsgdstale-%d-1-b", os.Getppid())
	other := fmt.Sprintf("dsgdother-%d-1-a", pid)
	for _, ns := range []string{stale, live, other} {
		if err := run(ctx, "ip", "netns", "add", ns); err != nil {
			if errors.Is(err, ErrUnavailable) {
				t.Skipf("cannot make network namespaces here: %v", err)
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { del(ns) })
	}
	gone, err := RemoveStale(ctx, "dsgdstale")
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 1 || gone[0] != stale {
		t.Fatalf("removed %v, want [%s]", gone, stale)
	}
	for ns, want := range map[string]bool{stale: false, live: true, other: true} {
		_, err := os.Stat("/run/netns/" + ns)
		if (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", ns, err == nil, want)
		}
	}
}

func TestOwnerPID(t *testing.T) {
	cases := []struct {
		name string
		pid  int
		ok   bool
	}{
		{"dsgd-123-1-a", 123, true},
		{"dsgd-123-17-b", 123, true},
		{"dsgd-123-1-c", 0, false},
		{"dsgd-x-1-a", 0, false},
		{"dsgd-123-a", 0, false},
		{"dsgdx-123-1-a", 0, false},
		{"other-123-1-a", 0, false},
		{"dsgd-0-1-a", 0, false},
	}
	for _, c := range cases {
		pid, ok := ownerPID(c.name, "dsgd")
		if pid != c.pid || ok != c.ok {
			t.Errorf("%s: got %d %v, want %d %v", c.name, pid, ok, c.pid, c.ok)
		}
	}
}

// TestUnavailableNamesCause: the reason a pair cannot be made names the cause.
func TestUnavailableNamesCause(t *testing.T) {
	err := Available()
	if err == nil {
		return // root with ip and tc: nothing to check here
	}
	if !errors.Is(err, ErrUnavailable) || !(strings.Contains(err.Error(), "not root") || strings.Contains(err.Error(), "iproute2")) {
		t.Fatalf("unclear: %v", err)
	}
}
