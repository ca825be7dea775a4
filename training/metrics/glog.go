package metrics

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Glog writes lines in the format of Google's glog, which Caffe logs in
// and Caffe's tools/extra/parse_log.py and extract_seconds.py read:
//
//	I1126 22:40:48.123456  4242 solver.cpp:239] Iteration 100, loss = 0.3
//
// a severity letter, month and day, local wall time to the microsecond,
// the thread id (here the process id) right-aligned in five columns, the
// source file and line, and the message. It is safe for concurrent use.
type Glog struct {
	mu  sync.Mutex
	w   io.Writer
	pid int
	err error
	// Now gives the time of each line (time.Now when nil); tests set it.
	Now func() time.Time
}

// NewGlog returns a Glog writing to w.
func NewGlog(w io.Writer) *Glog { return &Glog{w: w, pid: os.Getpid()} }

// Infof writes one INFO line attributed to file:line, the message made
// by format and args. A newline ends the line; the message should hold
// none. Write errors are kept for Err.
func (g *Glog) Infof(file string, line int, format string, args ...any) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	t := now()
	msg := fmt.Sprintf(format, args...)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return
	}
	_, g.err = fmt.Fprintf(g.w, "I%02d%02d %02d:%02d:%02d.%06d %5d %s:%d] %s\n",
		int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1000, g.pid, file, line, msg)
}

// Err is the first error writing a line, or nil.
func (g *Glog) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
