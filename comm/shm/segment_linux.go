package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	errNoSpace  = syscall.ENOSPC
	errReadOnly = syscall.EROFS
)

func create(path string, size int) (*Segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, unwrapPath(err)
	}
	fail := func(err error) (*Segment, error) {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	if err := flock(f, syscall.LOCK_SH); err != nil {
		return fail(fmt.Errorf("flock: %w", err))
	}
	// fallocate reserves tmpfs pages now: with a mere ftruncate a full
	// tmpfs would surface as SIGBUS on the first write to the mapping.
	if err := fallocate(f, size); err != nil {
		return fail(err)
	}
	data, err := mapFile(f, size)
	if err != nil {
		return fail(err)
	}
	return &Segment{Path: path, path: path, Data: data, f: f}, nil
}

func open(path string, size int) (*Segment, error) {
	return openFlags(path, size, syscall.O_NOFOLLOW)
}

// OpenProc maps the segment another process holds, at the ProcPath it
// gave (/proc/PID/fd/FD), which must hold exactly size bytes. It fails
// for a process of another user or in another PID namespace.
func OpenProc(path string, size int) (*Segment, error) {
	var pid, fd int
	if _, err := fmt.Sscanf(path, "/proc/%d/fd/%d", &pid, &fd); err != nil || fmt.Sprintf("/proc/%d/fd/%d", pid, fd) != path {
		return nil, fmt.Errorf("shm: %q is not a /proc/PID/fd/FD path", path)
	}
	seg, err := openFlags(path, size, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: cannot map shared memory segment %s: %w", path, err)
	}
	return seg, nil
}

func openFlags(path string, size int, flags int) (*Segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR|flags, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() != int64(size) {
		f.Close()
		return nil, fmt.Errorf("it holds %d bytes, want %d", st.Size(), size)
	}
	if err := flock(f, syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("flock: %w", err)
	}
	data, err := mapFile(f, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Segment{Path: path, path: path, Data: data, f: f}, nil
}

// unwrapPath drops the *PathError wrapper: the caller names the path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func fallocate(f *os.File, size int) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(size))
		switch err {
		case nil:
			return nil
		case syscall.EINTR:
			continue
		case syscall.EOPNOTSUPP:
			// Not tmpfs: size the file and let the pages come on use.
			return f.Truncate(int64(size))
		}
		return fmt.Errorf("reserving memory: %w", err)
	}
}

func mapFile(f *os.File, size int) ([]byte, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return data, nil
}

func unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return syscall.Munmap(b)
}

// startTime returns a process's start time in clock ticks since boot
// (field 22 of /proc/PID/stat), which with the pid identifies it.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// alive reports whether the process pid started at start still runs.
func alive(pid int, start uint64) bool {
	st, err := startTime(pid)
	return err == nil && st == start
}

// Sweep removes the dsgd segments in dir ("" for DefaultDir) whose
// creator is dead: no process holds the segment's flock, and the pid and
// start time in its name are not a running process (a file whose name
// does not parse must also be older than a minute). It returns the paths
// it removed. Segments of live jobs are left alone, whoever owns them.
func Sweep(dir string) ([]string, error) {
	if dir == "" {
		dir = DefaultDir
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("shm: sweeping %s: %w", dir, err)
	}
	var removed []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, Prefix) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		pid, start, ok := parseName(name)
		if ok && alive(pid, start) {
			continue
		}
		if !ok {
			if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < time.Minute {
				continue
			}
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue // gone already, or not ours to open
		}
		// A held lock means a live party (a peer mapping it): keep it.
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		if err := os.Remove(path); err == nil {
			removed = append(removed, path)
		}
		f.Close()
	}
	return removed, nil
}

// HostID identifies the memory-sharing domain this process is in: the
// kernel's boot id, the inode of its network namespace, the host name
// and the device of dir ("" for DefaultDir). Two processes with the same
// HostID run on one booted kernel, in one network namespace (so
// namespaces standing in for hosts are told apart), and see the same
// shared-memory file system. It is "" where any part cannot be read:
// then nothing is shared.
func HostID(dir string) string {
	if dir == "" {
		dir = DefaultDir
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	var ns, d syscall.Stat_t
	if syscall.Stat("/proc/self/ns/net", &ns) != nil || syscall.Stat(dir, &d) != nil {
		return ""
	}
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s/net:%d/%s/shmdev:%d", strings.TrimSpace(string(boot)), ns.Ino, host, d.Dev)
}
