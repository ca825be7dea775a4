package timeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"testing"
	"time"
)

// event is one decoded trace event.
type event struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	TS   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args"`
}

// decode parses a whole trace, failing the test if it is not valid JSON
// in the object form.
func decode(t *testing.T, b []byte) []event {
	t.Helper()
	var tr struct {
		TraceEvents []event `json:"traceEvents"`
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("trace is not valid JSON: %v\n%s", err, b)
	}
	if _, ok := raw["traceEvents"]; !ok {
		t.Fatalf("trace has no traceEvents: %s", b)
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("trace events: %v\n%s", err, b)
	}
	// The first event is the Writer's start instant (for MergeNotes);
	// the tests look at the rest.
	if len(tr.TraceEvents) == 0 || tr.TraceEvents[0].Name != startEvent || tr.TraceEvents[0].Args["start_unix_us"] == nil {
		t.Fatalf("the trace does not open with its start instant:\n%s", b)
	}
	return tr.TraceEvents[1:]
}

func TestTimelineSpansAndMetadata(t *testing.T) {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		write    func(w *Writer)
		want     []event
		wantJSON string // a substring of the output, when set
	}{
		{
			name:  "empty",
			write: func(w *Writer) {},
		},
		{
			name: "metadata",
			write: func(w *Writer) {
				w.Process(0, "dsgd train")
				w.Track(0, 3, "worker 3")
			},
			want: []event{
				{Name: "process_name", Ph: "M", PID: 0, TID: 0, Args: map[string]any{"name": "dsgd train"}},
				{Name: "thread_name", Ph: "M", PID: 0, TID: 3, Args: map[string]any{"name": "worker 3"}},
				{Name: "thread_sort_index", Ph: "M", PID: 0, TID: 3, Args: map[string]any{"sort_index": 3.0}},
			},
		},
		{
			name: "wall-clock span",
			write: func(w *Writer) {
				w.Span(0, 1, "conv1", "forward", t0.Add(1500*time.Microsecond), 250*time.Microsecond, nil)
			},
			want: []event{{Name: "conv1", Cat: "forward", Ph: "X", TS: 1500, Dur: 250, PID: 0, TID: 1}},
		},
		{
			name: "nanoseconds kept",
			write: func(w *Writer) {
				w.Span(2, 7, "x", "c", t0.Add(1234567*time.Nanosecond), 42*time.Nanosecond, nil)
			},
			want:     []event{{Name: "x", Cat: "c", Ph: "X", TS: 1234.567, Dur: 0.042, PID: 2, TID: 7}},
			wantJSON: `"ts":1234.567,"dur":0.042`,
		},
		{
			name: "virtual time and args",
			write: func(w *Writer) {
				w.SpanAt(0, 4, "allreduce grads[0:10]", "comm", 3*time.Second, time.Millisecond, map[string]any{"bytes": 40})
			},
			want: []event{{Name: "allreduce grads[0:10]", Cat: "comm", Ph: "X", TS: 3e6, Dur: 1000, TID: 4, Args: map[string]any{"bytes": 40.0}}},
		},
		{
			name: "before the start",
			write: func(w *Writer) {
				w.SpanAt(0, 0, "early", "c", -2500*time.Nanosecond, time.Microsecond, nil)
			},
			want: []event{{Name: "early", Cat: "c", Ph: "X", TS: -2.5, Dur: 1}},
		},
		{
			name: "names that need escaping",
			write: func(w *Writer) {
				w.Span(0, 0, "a\"b\\c\nd\x01é\xff", "cat\t", t0, 0, nil)
			},
			want: []event{{Name: "a\"b\\c\nd\x01é\ufffd", Cat: "cat\t", Ph: "X"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := New(&buf, t0)
			tc.write(w)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := decode(t, buf.Bytes())
			if len(got) != len(tc.want) {
				t.Fatalf("got %d events, want %d:\n%s", len(got), len(tc.want), buf.Bytes())
			}
			for i := range got {
				if fmt.Sprint(got[i]) != fmt.Sprint(tc.want[i]) {
					t.Errorf("event %d:\n got %+v\nwant %+v", i, got[i], tc.want[i])
				}
			}
			if tc.wantJSON != "" && !bytes.Contains(buf.Bytes(), []byte(tc.wantJSON)) {
				t.Errorf("output lacks %s:\n%s", tc.wantJSON, buf.Bytes())
			}
		})
	}
}

func TestTimelineZeroStartIsNew(t *testing.T) {
	before := time.Now()
	var buf bytes.Buffer
	w := New(&buf, time.Time{})
	if w.Start().Before(before) || w.Start().After(time.Now()) {
		t.Fatalf("start %v is not the instant of New", w.Start())
	}
	w.Span(0, 0, "s", "c", w.Start().Add(time.Millisecond), time.Millisecond, nil)
	w.Close()
	if ev := decode(t, buf.Bytes()); len(ev) != 1 || ev[0].TS != 1000 {
		t.Fatalf("events %+v, want one at ts 1000", ev)
	}
}

func TestTimelineConcurrentSpansAllLand(t *testing.T) {
	const goroutines, each = 8, 500
	var buf bytes.Buffer
	w := New(&buf, time.Time{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Track(0, g, fmt.Sprintf("worker %d", g))
			for i := range each {
				w.SpanAt(0, g, fmt.Sprintf("span %d", i), "c", time.Duration(i)*time.Microsecond, time.Microsecond, nil)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int]bool{}
	for _, e := range decode(t, buf.Bytes()) {
		if e.Ph != "X" {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(e.Name, "span %d", &i); err != nil || e.TS != float64(i) {
			t.Fatalf("garbled span %+v", e)
		}
		seen[[2]int{e.TID, i}] = true
	}
	if len(seen) != goroutines*each {
		t.Fatalf("%d distinct spans landed, want %d", len(seen), goroutines*each)
	}
}

func TestTimelineVirtualAdapter(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, time.Time{})
	span := w.Virtual(1)
	span(5, "send", "comm", 2*time.Millisecond, 3*time.Microsecond)
	w.Close()
	want := event{Name: "send", Cat: "comm", Ph: "X", TS: 2000, Dur: 3, PID: 1, TID: 5}
	if ev := decode(t, buf.Bytes()); len(ev) != 1 || fmt.Sprint(ev[0]) != fmt.Sprint(want) {
		t.Fatalf("events %+v, want %+v", ev, want)
	}
}

func TestTimelineErrors(t *testing.T) {
	boom := errors.New("disk full")
	tests := []struct {
		name  string
		out   io.Writer
		write func(w *Writer)
		want  error  // errors.Is target, when set
		msg   string // substring of the error
	}{
		{"failing writer, no events", failWriter{boom}, func(*Writer) {}, boom, "disk full"},
		{"failing writer after spans", failWriter{boom}, func(w *Writer) {
			for i := range 10000 { // more than the buffer holds
				w.SpanAt(0, 0, "s", "c", time.Duration(i), 1, nil)
			}
		}, boom, "disk full"},
		{"args that do not encode", io.Discard, func(w *Writer) {
			w.SpanAt(0, 0, "bad", "c", 0, 1, map[string]any{"f": func() {}})
		}, nil, `args of span "bad"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := New(tc.out, time.Time{})
			tc.write(w)
			err := w.Close()
			if err == nil {
				t.Fatal("Close returned nil")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v is not %v", err, tc.want)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(tc.msg)) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
			if again := w.Close(); again != err {
				t.Errorf("second Close returned %v, want %v", again, err)
			}
			if w.Err() != err {
				t.Errorf("Err returned %v, want %v", w.Err(), err)
			}
		})
	}
}

func TestTimelineSpanAfterCloseDropped(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, time.Time{})
	w.SpanAt(0, 0, "a", "c", 0, 1, nil)
	w.Close()
	n := buf.Len()
	w.SpanAt(0, 0, "b", "c", 0, 1, nil)
	w.Track(0, 1, "late")
	if buf.Len() != n {
		t.Fatalf("events after Close were written: %s", buf.Bytes())
	}
	if ev := decode(t, buf.Bytes()); len(ev) != 1 {
		t.Fatalf("got %d events, want 1", len(ev))
	}
}

func TestTimelineSpanDoesNotAllocate(t *testing.T) {
	w := New(io.Discard, time.Time{})
	start := time.Now()
	w.Span(0, 1, "conv1", "forward", start, time.Millisecond, nil) // grows the scratch buffer
	allocs := testing.AllocsPerRun(100, func() {
		w.Span(0, 1, "conv1", "forward", start, time.Millisecond, nil)
	})
	if allocs != 0 {
		t.Fatalf("Span allocates %v times per call, want 0", allocs)
	}
}

// failWriter fails every write.
type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// FuzzSpan: any name, category and times give a trace that parses back
// to the same strings (invalid UTF-8 aside) and never panics.
func FuzzSpan(f *testing.F) {
	f.Add("conv1", "forward", int64(0), int64(1000))
	f.Add("a\"b\\c\n\x00", "\xff\xfe", int64(-5), int64(-1))
	f.Add("日本語\u2028", "", int64(1<<62), int64(999))
	f.Fuzz(func(t *testing.T, name, cat string, at, dur int64) {
		var buf bytes.Buffer
		w := New(&buf, time.Time{})
		w.Track(0, 0, name)
		w.SpanAt(0, 0, name, cat, time.Duration(at), time.Duration(dur), nil)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		ev := decode(t, buf.Bytes())
		if len(ev) != 3 {
			t.Fatalf("got %d events, want 3", len(ev))
		}
		want, _ := json.Marshal(name) // json.Marshal also turns invalid UTF-8 into U+FFFD
		var back string
		json.Unmarshal(want, &back)
		if ev[2].Name != back || ev[0].Args["name"] != back {
			t.Fatalf("name %q came back as %q", name, ev[2].Name)
		}
		if got, want := ev[2].TS, float64(at)/1e3; math.Abs(got-want) > 1e-12*math.Abs(want)+1e-9 {
			t.Fatalf("ts %v, want %v", got, want)
		}
	})
}
