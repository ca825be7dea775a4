package smb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"dsgd/comm/rpc"
)

// The test binary doubles as the client process that TestShmLeaseKill9
// kills: with SMB_TEST_LEASE set to a server address it begins a write
// through shared memory and never ends it.
func TestMain(m *testing.M) {
	if addr := os.Getenv("SMB_TEST_LEASE"); addr != "" {
		os.Exit(leaseChild(addr))
	}
	os.Exit(m.Run())
}

func leaseChild(addr string) int {
	ctx := context.Background()
	cl, err := Dial(ctx, addr, Config{Token: "tok"})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	m, err := cl.acquire(ctx, "w")
	if err != nil || m == nil || !cl.shmOn(ctx) {
		fmt.Println("error: no mapping:", err)
		return 1
	}
	err = cl.do(ctx, func(c *conn) error {
		return c.call(ctx, opShmBegin, "w", [rpc.NumInts]int64{1, 0, 4, int64(m.gen)}, nil)
	})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("holding")
	time.Sleep(time.Minute)
	return 0
}

// shmPair serves a sharing store with segments in a fresh directory and
// dials it; the client is on this host, so it maps the buffers.
func shmPair(t *testing.T, cfg Config) (*Client, *Store, string) {
	t.Helper()
	dir := t.TempDir()
	s := NewShmStore(0, dir)
	srv := startServer(t, s, cfg)
	return dialTest(t, srv.Addr(), cfg), s, dir
}

func TestShmClient(t *testing.T) {
	buffersSuite(t, func(t *testing.T) Buffers {
		cl, _, _ := shmPair(t, Config{Token: "tok", Timeout: 5 * time.Second, WaitSlice: 20 * time.Millisecond})
		return cl
	})
}

func TestShmStore(t *testing.T) {
	buffersSuite(t, func(t *testing.T) Buffers { return NewShmStore(0, t.TempDir()) })
}

// TestShmMapped: a client on the server's host reads and writes through
// its mapping (the server's memory changes with no bytes sent), leaves
// no file behind, and a client with NoShm sees the same values over the
// connection.
func TestShmMapped(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Token: "tok", Timeout: 5 * time.Second}
	cl, s, dir := shmPair(t, cfg)
	mustCreate(t, cl, "w", 1000)
	src := make([]float32, 1000)
	for i := range src {
		src[i] = float32(i) * 0.5
	}
	if err := cl.Write(ctx, "w", 0, src); err != nil {
		t.Fatal(err)
	}
	cl.shmc.mu.Lock()
	m, state := cl.shmc.maps["w"], cl.shmc.state
	cl.shmc.mu.Unlock()
	if state != 1 || m == nil {
		t.Fatalf("the client did not map the buffer (state %d)", state)
	}
	b, _ := s.get("w")
	if b.data[999] != 499.5 || &m.data[0] == &b.data[0] {
		t.Fatalf("server sees %g; mappings distinct: %v", b.data[999], &m.data[0] != &b.data[0])
	}
	if v, _ := s.Version(ctx, "w"); v != 1 {
		t.Errorf("version %d after one write, want 1", v)
	}
	other := dialTest(t, startServerAddr(t, s, cfg), Config{Token: "tok", NoShm: true})
	got := make([]float32, 1000)
	if err := other.Read(ctx, "w", 0, got); err != nil || got[999] != 499.5 {
		t.Fatalf("read over the connection: %v, %g", err, got[999])
	}
	other.shmc.mu.Lock()
	if len(other.shmc.maps) != 0 {
		t.Error("a NoShm client mapped a buffer")
	}
	other.shmc.mu.Unlock()
	if err := cl.Write(ctx, "w", 995, make([]float32, 10)); !errors.Is(err, ErrBounds) {
		t.Errorf("write past the end: %v", err)
	}
	if err := cl.Read(ctx, "nope", 0, got); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("read of an unknown key: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left in the segment directory: %v", left[0].Name())
	}
}

func startServerAddr(t *testing.T, s *Store, cfg Config) string {
	return startServer(t, s, cfg).Addr()
}

// TestShmFreeRecreate: a buffer freed and made again with another size
// is a new segment; a client's old mapping is dropped, not used.
func TestShmFreeRecreate(t *testing.T) {
	ctx := context.Background()
	cl, _, _ := shmPair(t, Config{Token: "tok", Timeout: 5 * time.Second})
	mustCreate(t, cl, "w", 10)
	if err := cl.Write(ctx, "w", 0, make([]float32, 10)); err != nil {
		t.Fatal(err)
	}
	if err := cl.Free(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, cl, "w", 20)
	want := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if err := cl.Write(ctx, "w", 0, want); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 20)
	if err := cl.Read(ctx, "w", 0, got); err != nil || got[19] != 20 {
		t.Fatalf("read after re-create: %v, %v", err, got)
	}
}

// TestShmLeaseKill9: a client process killed with -9 while it holds a
// write lease does not block the buffer: the server releases the lease
// when the connection ends.
func TestShmLeaseKill9(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Token: "tok", Timeout: 5 * time.Second}
	cl, _, dir := shmPair(t, cfg)
	mustCreate(t, cl, "w", 4)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SMB_TEST_LEASE="+cl.addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "holding" {
		t.Fatalf("child said %q", line)
	}
	// The lease blocks a write...
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = cl.Write(wctx, "w", 0, []float32{1, 2, 3, 4})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write beside a held lease: %v, want the deadline", err)
	}
	t0 := time.Now()
	// ...until its holder dies.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	wctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := cl.Write(wctx, "w", 0, []float32{1, 2, 3, 4}); err != nil {
		t.Fatalf("write after the lease holder died: %v", err)
	}
	t.Logf("write went through %v after the kill", time.Since(t0))
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left[0].Name())
	}
}

// TestShmStoreFull: a buffer that does not fit the segment directory is
// an ErrLimit error naming the path and the cause.
func TestShmStoreFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tiny tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, bytes.TrimSpace(out))
	}
	defer exec.Command("umount", dir).Run()
	s := NewShmStore(0, dir)
	_, err := s.Create(context.Background(), "big", 1<<20)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), dir+"/dsgd-") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("create in a full directory: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left[0].Name())
	}
}
