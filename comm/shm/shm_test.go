package shm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the child process of the kill -9 tests:
// with SHM_TEST_CHILD set it runs that role instead of the tests.
func TestMain(m *testing.M) {
	if role := os.Getenv("SHM_TEST_CHILD"); role != "" {
		os.Exit(child(role, os.Getenv("SHM_TEST_ARG")))
	}
	os.Exit(m.Run())
}

// child runs one role of a child process and returns its exit status.
func child(role, arg string) int {
	switch role {
	case "create": // create a segment in dir arg, say its path, hang
		seg, err := Create(arg, "test", 1<<16)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println(seg.Path)
		time.Sleep(time.Minute)
	case "open": // map the segment at arg, say so, hang
		seg, err := Open(arg, 1<<16)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("mapped", seg.Name())
		time.Sleep(time.Minute)
	case "ring": // map the ring segment at arg and write pattern bytes
		seg, err := Open(arg, RingSize(1<<12))
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		r, err := NewRing(seg.Data)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		writeAll(r, pattern(ringBytes))
		fmt.Println("done")
	}
	return 0
}

// startChild starts the test binary in role with arg and returns it and
// its first line of output.
func startChild(t *testing.T, role, arg string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SHM_TEST_CHILD="+role, "SHM_TEST_ARG="+arg)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child %s: %v", role, err)
	}
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "error:") {
		t.Fatalf("child %s: %s", role, line)
	}
	return cmd, line
}

func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, Prefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCreateOpenUnlink(t *testing.T) {
	dir := t.TempDir()
	seg, err := Create(dir, "test", 8192)
	if err != nil {
		t.Fatal(err)
	}
	if len(seg.Data) != 8192 || !strings.HasPrefix(seg.Name(), Prefix+strconv.Itoa(os.Getpid())+"-") {
		t.Fatalf("segment %s of %d bytes", seg.Name(), len(seg.Data))
	}
	peer, err := Open(seg.Path, 8192)
	if err != nil {
		t.Fatal(err)
	}
	seg.Data[100] = 42
	if peer.Data[100] != 42 {
		t.Fatal("a write through one mapping is not seen through the other")
	}
	if _, err := Open(seg.Path, 4096); err == nil || !strings.Contains(err.Error(), "holds 8192 bytes, want 4096") {
		t.Errorf("Open with the wrong size: %v", err)
	}
	if err := seg.Unlink(); err != nil {
		t.Fatal(err)
	}
	if err := peer.Unlink(); err != nil { // the peer's unlink of a removed file
		t.Fatal(err)
	}
	if f := segFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left after Unlink: %v", f)
	}
	peer.Data[101] = 7 // still mapped after the unlink
	if seg.Data[101] != 7 {
		t.Fatal("mapping broken by the unlink")
	}
	seg.Close()
	peer.Close()
	seg.Close() // twice is harmless
	if _, err := Open(filepath.Join(dir, "dsgd-none"), 1); err == nil || !strings.Contains(err.Error(), "dsgd-none") {
		t.Errorf("Open of a missing file: %v", err)
	}
}

func TestCreateBadArgs(t *testing.T) {
	for _, tc := range []struct {
		purpose string
		size    int
		want    string
	}{
		{"test", 0, "segment of 0 bytes"},
		{"a-b", 10, "purpose"},
		{"", 10, "purpose"},
	} {
		if _, err := Create(t.TempDir(), tc.purpose, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%q, %d): %v, want %q", tc.purpose, tc.size, err, tc.want)
		}
	}
}

// mountTmpfs mounts a tmpfs of size bytes (with extra options) on a
// fresh directory for the test, or skips the test where mounting is not
// allowed.
func mountTmpfs(t *testing.T, size int, opts string) string {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root on Linux")
	}
	dir := t.TempDir()
	o := "size=" + strconv.Itoa(size)
	if opts != "" {
		o += "," + opts
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", o, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): the full and read-only /dev/shm cases are not tested", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// TestCreateErrors: a segment that cannot be made is an error naming the
// path and the cause, and leaves no file behind.
func TestCreateErrors(t *testing.T) {
	t.Run("Full", func(t *testing.T) {
		dir := mountTmpfs(t, 64<<10, "")
		_, err := Create(dir, "test", 1<<20)
		if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dir+"/"+Prefix) ||
			!strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "--shm off") {
			t.Fatalf("Create in a full tmpfs: %v", err)
		}
		if f := segFiles(t, dir); len(f) != 0 {
			t.Fatalf("files left after a failed Create: %v", f)
		}
	})
	t.Run("ReadOnly", func(t *testing.T) {
		dir := mountTmpfs(t, 1<<20, "ro")
		_, err := Create(dir, "test", 4096)
		if err == nil || !strings.Contains(err.Error(), dir+"/"+Prefix) || !strings.Contains(err.Error(), "read-only file system") {
			t.Fatalf("Create in a read-only tmpfs: %v", err)
		}
	})
	t.Run("Missing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nope")
		_, err := Create(dir, "test", 4096)
		if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("Create in a missing directory: %v", err)
		}
	})
}

// TestSweepKill9: a creator killed with -9 before its segment was
// unlinked leaves a file that Sweep removes; a live creator's, and one a
// live peer still maps, are kept.
func TestSweepKill9(t *testing.T) {
	dir := t.TempDir()
	dead, deadPath := startChild(t, "create", dir)
	_, livePath := startChild(t, "create", dir)
	mapper, mappedPath := startChild(t, "create", dir)
	_, _ = startChild(t, "open", mappedPath)
	kill9(t, dead)
	kill9(t, mapper) // its peer, alive, still holds the segment
	removed, err := Sweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != deadPath {
		t.Fatalf("Sweep removed %v, want only %s", removed, deadPath)
	}
	for _, p := range []string{livePath, mappedPath} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Sweep removed a live segment: %v", err)
		}
	}
	// A file that is not a dsgd segment's is left alone.
	other := filepath.Join(dir, "other")
	os.WriteFile(other, nil, 0o600)
	if removed, _ := Sweep(dir); len(removed) != 0 {
		t.Errorf("second Sweep removed %v", removed)
	}
	if _, err := os.Stat(other); err != nil {
		t.Error(err)
	}
}

// TestUnlinkedSurvivesKill9: once both parties mapped and the segment was
// unlinked, killing either leaves nothing in the directory and the other
// keeps its memory.
func TestUnlinkedSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	seg, err := Create(dir, "test", 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	peer, _ := startChild(t, "open", seg.Path)
	if err := seg.Unlink(); err != nil {
		t.Fatal(err)
	}
	kill9(t, peer)
	seg.Data[0] = 1
	if f := segFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left: %v", f)
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

const ringBytes = 3<<20 + 13

func writeAll(r *Ring, p []byte) {
	for len(p) > 0 {
		f := r.Free()
		if len(f) == 0 {
			r.WaitFree(1, time.Second)
			continue
		}
		n := copy(f, p)
		r.Commit(n)
		p = p[n:]
	}
}

func readAll(r *Ring, n int, deadline time.Time) ([]byte, error) {
	out := make([]byte, 0, n)
	for len(out) < n {
		d := r.Data()
		if len(d) == 0 {
			if time.Now().After(deadline) {
				return out, fmt.Errorf("only %d of %d bytes by the deadline", len(out), n)
			}
			r.WaitData(1, 100*time.Millisecond)
			continue
		}
		k := min(len(d), n-len(out))
		out = append(out, d[:k]...)
		r.Release(k)
	}
	return out, nil
}

// TestRing streams bytes through a small ring between two goroutines,
// in odd-sized pieces, so it wraps many times and both sides block.
func TestRing(t *testing.T) {
	seg, err := Create(t.TempDir(), "test", RingSize(1<<12))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	r, err := NewRing(seg.Data)
	if err != nil {
		t.Fatal(err)
	}
	want := pattern(ringBytes)
	var wg sync.WaitGroup
	wg.Go(func() {
		p := want
		for len(p) > 0 {
			k := min(len(p), 1+len(p)%977)
			writeAll(r, p[:k])
			p = p[k:]
		}
	})
	got, err := readAll(r, len(want), time.Now().Add(20*time.Second))
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes differ after the ring")
	}
	if _, err := NewRing(make([]byte, RingSize(100))); err == nil {
		t.Error("NewRing accepted 100 data bytes")
	}
}

// TestRingProcesses streams through a ring from a child process: the
// futex wake-ups work across processes.
func TestRingProcesses(t *testing.T) {
	seg, err := Create(t.TempDir(), "test", RingSize(1<<12))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	r, err := NewRing(seg.Data)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SHM_TEST_CHILD=ring", "SHM_TEST_ARG="+seg.Path)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got, err := readAll(r, ringBytes, time.Now().Add(20*time.Second))
	cmd.Wait()
	if err != nil {
		t.Fatalf("%v; child said %q", err, out.String())
	}
	if !bytes.Equal(got, pattern(ringBytes)) {
		t.Fatal("bytes differ after the ring")
	}
}

func TestHostID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	a, b := HostID(""), HostID("")
	if a == "" || a != b {
		t.Fatalf("HostID %q then %q", a, b)
	}
	if HostID(t.TempDir()) == a && !strings.Contains(a, "shmdev:") {
		t.Fatalf("HostID %q does not name the shared memory device", a)
	}
}

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pid   int
		start uint64
		ok    bool
	}{
		{"dsgd-12-345-tcp-00ff", 12, 345, true},
		{"dsgd-12-345-tcp", 0, 0, false},
		{"dsgd-x-345-tcp-00", 0, 0, false},
		{"other-12-345-tcp-00", 0, 0, false},
		{"dsgd-0-345-tcp-00", 0, 0, false},
	} {
		pid, start, ok := parseName(tc.name)
		if pid != tc.pid || start != tc.start || ok != tc.ok {
			t.Errorf("parseName(%q) = %d, %d, %v", tc.name, pid, start, ok)
		}
	}
}
