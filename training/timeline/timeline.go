package timeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Writer streams trace events to an io.Writer as one JSON object,
// {"traceEvents":[...]}. Its methods are safe for concurrent use. A
// Writer's methods report nothing: the first error (a failed write, args
// that cannot be encoded) is kept, later events are dropped, and Close
// returns it.
type Writer struct {
	start time.Time

	// mu guards everything below.
	mu     sync.Mutex
	bw     *bufio.Writer
	buf    []byte // the event being encoded
	n      int    // events written
	err    error
	closed bool
}

// New returns a Writer that writes to w, with times measured from start
// (the zero Time: the instant New is called). New writes nothing to w
// before the first event or Close; Close does not close w.
func New(w io.Writer, start time.Time) *Writer {
	if start.IsZero() {
		start = time.Now()
	}
	return &Writer{start: start, bw: bufio.NewWriterSize(w, 64<<10)}
}

// Start is the instant that timestamps are measured from.
func (w *Writer) Start() time.Time { return w.start }

// Process names process pid (a "process_name" metadata event): in a
// trace viewer, the group that the process's tracks are drawn under.
func (w *Writer) Process(pid int, name string) {
	w.meta("process_name", pid, 0, name, -1)
}

// Track names thread tid of process pid (a "thread_name" metadata
// event): one track, such as a rank's. Tracks are sorted by tid.
func (w *Writer) Track(pid, tid int, name string) {
	w.meta("thread_name", pid, tid, name, tid)
}

// TrackOrdered is Track with the track's place among its process's
// tracks given by order (ascending) instead of tid: a rank's
// communication track drawn right under its compute track.
func (w *Writer) TrackOrdered(pid, tid, order int, name string) {
	w.meta("thread_name", pid, tid, name, max(order, 0))
}

// Span records a complete event ("X") on track (pid, tid) that began at
// start and lasted dur. name is what the viewer shows; cat, its category,
// lets a viewer filter or colour spans. args, when not nil, is shown with
// the span and must encode as JSON; a nil args allocates nothing.
func (w *Writer) Span(pid, tid int, name, cat string, start time.Time, dur time.Duration, args map[string]any) {
	w.SpanAt(pid, tid, name, cat, start.Sub(w.start), dur, args)
}

// SpanAt is Span with the start given as an offset from the Writer's
// start instant: the simulator's virtual time, or any clock of the
// caller's. Negative offsets are written as they are.
func (w *Writer) SpanAt(pid, tid int, name, cat string, at, dur time.Duration, args map[string]any) {
	var extra []byte
	if args != nil {
		var err error
		if extra, err = json.Marshal(args); err != nil {
			w.fail(fmt.Errorf("timeline: args of span %q: %w", name, err))
			return
		}
	}
	w.span(pid, tid, name, cat, at, dur, extra, nil)
}

// Count is one integer argument of a span: shown with it as Key: N.
type Count struct {
	Key string
	N   int64
}

// SpanCounts is Span with integer arguments only (an iteration number, a
// value count), encoded straight into the event: unlike Span with a
// map, it allocates nothing, so a rank can trace every layer of every
// iteration.
func (w *Writer) SpanCounts(pid, tid int, name, cat string, start time.Time, dur time.Duration, counts ...Count) {
	w.span(pid, tid, name, cat, start.Sub(w.start), dur, nil, counts)
}

// span writes an "X" event with args encoded as extra (JSON) or counts.
func (w *Writer) span(pid, tid int, name, cat string, at, dur time.Duration, extra []byte, counts []Count) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return
	}
	b := w.open()
	b = append(b, `{"name":`...)
	b = appendString(b, name)
	b = append(b, `,"cat":`...)
	b = appendString(b, cat)
	b = append(b, `,"ph":"X","ts":`...)
	b = appendMicros(b, at)
	b = append(b, `,"dur":`...)
	b = appendMicros(b, dur)
	b = appendIDs(b, pid, tid)
	if extra != nil {
		b = append(b, `,"args":`...)
		b = append(b, extra...)
	}
	for i, c := range counts {
		if i == 0 {
			b = append(b, `,"args":{`...)
		} else {
			b = append(b, ',')
		}
		b = appendString(b, c.Key)
		b = append(b, ':')
		b = strconv.AppendInt(b, c.N, 10)
		if i == len(counts)-1 {
			b = append(b, '}')
		}
	}
	b = append(b, '}')
	w.write(b)
}

// Virtual adapts w to a simulator's trace callback: the function it
// returns records each event on track (pid, rank) of w, with start and
// dur in virtual time (durations since the simulation's time zero, which
// is w's start). A simulator's hook calls it with its event's fields:
//
//	span := tl.Virtual(0)
//	cfg.Trace = func(e sim.TraceEvent) { span(e.Rank, e.Name, e.Cat, e.Start, e.Dur) }
func (w *Writer) Virtual(pid int) func(rank int, name, cat string, start, dur time.Duration) {
	return func(rank int, name, cat string, start, dur time.Duration) {
		w.SpanAt(pid, rank, name, cat, start, dur, nil)
	}
}

// Err returns the first error the Writer met, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close writes the end of the trace and flushes it, and returns the first
// error met since New. Events reported after Close are dropped. Close
// does not close the underlying io.Writer; a second Close returns the
// first one's answer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if w.n == 0 {
		w.bw.Write(w.appendStart([]byte(`{"traceEvents":[`)))
	}
	// The start instant lets Merge put several processes' traces on
	// one clock ("otherData" is the format's place for such metadata).
	fmt.Fprintf(w.bw, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"start_unix_us\":%d}}\n", w.start.UnixMicro())
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("timeline: %w", err)
	}
	return w.err
}

// appendStart appends the trace's first event: a metadata event with the
// start instant, which otherData repeats at Close; a trace cut short (its
// process killed) has only this one (MergeNotes).
func (w *Writer) appendStart(b []byte) []byte {
	b = append(b, "\n{\"name\":\""+startEvent+"\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"start_unix_us\":"...)
	b = strconv.AppendInt(b, w.start.UnixMicro(), 10)
	return append(b, "}}"...)
}

// meta writes a metadata event naming a process or thread, and with
// sort >= 0 its sort index.
func (w *Writer) meta(kind string, pid, tid int, name string, sort int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return
	}
	b := w.open()
	b = append(b, `{"name":"`...)
	b = append(b, kind...)
	b = append(b, `","ph":"M"`...)
	b = appendIDs(b, pid, tid)
	b = append(b, `,"args":{"name":`...)
	b = appendString(b, name)
	b = append(b, "}}"...)
	if sort >= 0 {
		b = append(b, ",\n"...)
		b = append(b, `{"name":"thread_sort_index","ph":"M"`...)
		b = appendIDs(b, pid, tid)
		b = append(b, `,"args":{"sort_index":`...)
		b = strconv.AppendInt(b, int64(sort), 10)
		b = append(b, "}}"...)
	}
	w.write(b)
}

// open starts encoding an event into w.buf: the array's opening or the
// separator from the previous event. w.mu must be held.
func (w *Writer) open() []byte {
	b := w.buf[:0]
	if w.n == 0 {
		b = append(b, `{"traceEvents":[`...)
		b = w.appendStart(b)
		b = append(b, ',')
	} else {
		b = append(b, ',')
	}
	return append(b, '\n')
}

// write writes an encoded event. w.mu must be held.
func (w *Writer) write(b []byte) {
	w.buf = b
	w.n++
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("timeline: %w", err)
	}
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func appendIDs(b []byte, pid, tid int) []byte {
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, `,"tid":`...)
	return strconv.AppendInt(b, int64(tid), 10)
}

// appendMicros writes d in microseconds, to the nanosecond.
func appendMicros(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	b = strconv.AppendInt(b, int64(d/time.Microsecond), 10)
	if ns := int64(d % time.Microsecond); ns != 0 {
		b = append(b, '.', byte('0'+ns/100), byte('0'+ns/10%10), byte('0'+ns%10))
	}
	return b
}

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
