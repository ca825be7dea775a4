package metrics

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// LogTimeLayout is the timestamp at the start of every line dsgd writes
// to its standard error, its log of warnings, notes and errors (through
// a StampWriter): local time to the millisecond, year first, so that lines of several ranks or runs
// sort and compare as text, and so that it cannot be taken for the glog
// lines of the --log file (Caffe's parse_log.py reads those, not these).
const LogTimeLayout = "2006-01-02 15:04:05.000"

// StampWriter prefixes each whole line written through it with the time
// it was completed and a fixed prefix (a rank's "[rank 1] "), and writes
// it to w in one Write. A partial line waits for its newline; Flush writes
// it. It is safe for concurrent use.
type StampWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	now    func() time.Time
	buf    []byte
}

// NewStampWriter returns a StampWriter that writes to w, each line
// prefixed with prefix after its time.
func NewStampWriter(w io.Writer, prefix string) *StampWriter {
	return &StampWriter{w: w, prefix: prefix, now: time.Now}
}

// Write buffers p and writes each line it completes, stamped.
func (s *StampWriter) Write(p []byte) (int, error) {
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
func (s *StampWriter) emit(line []byte) error {
	out := make([]byte, 0, len(LogTimeLayout)+1+len(s.prefix)+len(line))
	out = s.now().AppendFormat(out, LogTimeLayout)
	out = append(out, ' ')
	out = append(out, s.prefix...)
	out = append(out, line...)
	_, err := s.w.Write(out)
	return err
}

// Flush writes a last unfinished line, with a newline.
func (s *StampWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		return nil
	}
	line := append(s.buf, '\n')
	s.buf = nil
	return s.emit(line)
}
