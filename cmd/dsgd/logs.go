package main

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"time"

	"dsgd/internal/launcher"
)

// logTimeLayout is the timestamp at the start of every line dsgd writes to
// its standard error, its log of warnings, notes and errors: local time
// to the millisecond, year first, so that lines of several ranks or runs
// sort and compare as text, and so that it cannot be taken for the glog
// lines of the --log file (Caffe's parse_log.py reads those, not these).
const logTimeLayout = "2006-01-02 15:04:05.000"

// stampWriter prefixes each whole line written through it with the time
// it was completed and a fixed prefix (a rank's "[rank 1] "), and writes
// it to w in one Write. A partial line waits for its newline; Flush writes
// it. It is safe for concurrent use.
type stampWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	now    func() time.Time
	buf    []byte
}

func newStampWriter(w io.Writer, prefix string) *stampWriter {
	return &stampWriter{w: w, prefix: prefix, now: time.Now}
}

func (s *stampWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := s.emit(s.buf[:i+1]); err != nil {
			s.buf = s.buf[i+1:]
			return len(p), err
		}
		s.buf = s.buf[i+1:]
	}
}

// emit writes one line with its stamp; the caller holds mu.
func (s *stampWriter) emit(line []byte) error {
	out := make([]byte, 0, len(logTimeLayout)+1+len(s.prefix)+len(line))
	out = s.now().AppendFormat(out, logTimeLayout)
	out = append(out, ' ')
	out = append(out, s.prefix...)
	out = append(out, line...)
	_, err := s.w.Write(out)
	return err
}

// Flush writes a last unfinished line, with a newline.
func (s *stampWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		return nil
	}
	line := append(s.buf, '\n')
	s.buf = nil
	return s.emit(line)
}

// logStreams is what this process writes to: stderr, its log of
// warnings, notes and errors, with each line stamped (logTimeLayout) and,
// for a rank other than 0 of a job a launcher started, prefixed with
// "[rank N] "; stdout, the progress and results, as it is (programs and
// scripts parse its lines, which carry their iteration numbers), and
// dropped for a rank other than 0: rank 0 reports the run, the others only
// their problems. A rank of dsgd's own --transport tcp launcher
// (DSGD_CHILD=1) writes plainly: the launcher stamps what it passes on.
// flush writes stderr's unfinished line.
func logStreams(stdout, stderr io.Writer, getenv func(string) string) (out, errw io.Writer, flush func()) {
	if getenv("DSGD_CHILD") == "1" {
		return stdout, stderr, func() {}
	}
	prefix := ""
	info, under, _ := launcher.Detect(getenv)
	if under && info.Size > 1 && info.Rank > 0 {
		prefix = "[rank " + strconv.Itoa(info.Rank) + "] "
		stdout = io.Discard
	}
	ew := newStampWriter(stderr, prefix)
	return stdout, ew, func() { ew.Flush() }
}

// ownTerminal reports whether w is a terminal of this process's own, where
// a progress bar may be redrawn and escape codes written. Under a launcher
// (mpirun, srun, torchrun) it is not, even when it is a terminal: Open MPI
// gives each rank a pseudo-terminal whose output it interleaves with the
// other ranks'.
func ownTerminal(w io.Writer, getenv func(string) string) bool {
	if _, under, _ := launcher.Detect(getenv); under || getenv("DSGD_CHILD") == "1" {
		return false
	}
	return isTerminal(w)
}

// asksHelp reports whether the command line asks for the commands' or a
// command's help (or gives no command, which prints the commands).
func asksHelp(args []string) bool {
	if len(args) == 0 || args[0] == "help" {
		return true
	}
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		case "--":
			return false
		}
	}
	return false
}
