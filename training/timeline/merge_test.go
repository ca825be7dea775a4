package timeline

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMerge: two processes' traces, started 1.5 s apart, merge onto the
// earlier one's clock, each under its own process id and name.
func TestMerge(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	write := func(start time.Time, span time.Duration) *bytes.Buffer {
		var b bytes.Buffer
		w := New(&b, start)
		w.Process(0, "dsgd worker")
		w.Track(0, 1, "worker 1")
		w.Span(0, 1, "conv1", "forward", start.Add(span), 2*time.Millisecond, map[string]any{"iter": 3})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return &b
	}
	a := write(t0.Add(1500*time.Millisecond), 10*time.Millisecond) // rank 1, started later
	b := write(t0, 20*time.Millisecond)                            // rank 0
	var out bytes.Buffer
	if err := Merge(&out, []Part{{"rank 0", 0, b}, {"rank 1", 1, a}, {"other", 7, strings.NewReader(`{"traceEvents":[{"name":"x","ph":"X","pid":3,"tid":0,"ts":5,"dur":1}]}`)}}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Events []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Ts   float64        `json:"ts"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
		OtherData map[string]int64 `json:"otherData"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("merged trace is not JSON: %v\n%s", err, out.String())
	}
	if got.OtherData["start_unix_us"] != t0.UnixMicro() {
		t.Errorf("merged start %d, want the earliest %d", got.OtherData["start_unix_us"], t0.UnixMicro())
	}
	spans := map[int]float64{}
	names := map[int]string{}
	for _, e := range got.Events {
		switch {
		case e.Ph == "X":
			spans[e.Pid] = e.Ts
		case e.Name == "process_name":
			names[e.Pid] = e.Args["name"].(string)
		}
	}
	// rank 0's span at 20 ms; rank 1's at 1500 + 10 ms on rank 0's clock;
	// a trace without a start keeps its times.
	for pid, want := range map[int]float64{0: 20e3, 1: 1510e3, 7: 5} {
		if spans[pid] != want {
			t.Errorf("pid %d: span at %v µs, want %v", pid, spans[pid], want)
		}
	}
	for pid, want := range map[int]string{0: "rank 0: dsgd worker", 1: "rank 1: dsgd worker", 7: "other"} {
		if names[pid] != want {
			t.Errorf("pid %d named %q, want %q", pid, names[pid], want)
		}
	}
	if err := Merge(&out, []Part{{"bad", 0, strings.NewReader("{")}}); err == nil || !strings.Contains(err.Error(), "bad's trace") {
		t.Errorf("a broken part: %v, want an error naming it", err)
	}
}

// TestMergeCutShort: a trace cut short, as a killed process leaves it (its
// Writer never closed, the bytes after the last flush lost), is refused
// by Merge; MergeNotes keeps its whole events on the merged clock, by the
// start instant its first event carries, and says so.
func TestMergeCutShort(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	var whole, cutShort bytes.Buffer
	w := New(&whole, t0)
	w.Span(0, 1, "conv1", "forward", t0.Add(20*time.Millisecond), time.Millisecond, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = New(&cutShort, t0.Add(time.Second))
	for i := range 5 {
		w.Span(0, 1, "conv1", "forward", t0.Add(time.Second+time.Duration(i)*10*time.Millisecond), time.Millisecond, nil)
	}
	w.bw.Flush()
	data := cutShort.Bytes()
	data = data[:len(data)-7] // the fifth span cut in the middle, no Close
	parts := func() []Part {
		return []Part{{"rank 0", 0, bytes.NewReader(whole.Bytes())}, {"rank 1", 1, bytes.NewReader(data)}}
	}
	var out bytes.Buffer
	if err := Merge(&out, parts()); err == nil || !strings.Contains(err.Error(), "rank 1's trace") {
		t.Fatalf("Merge of a trace cut short: %v, want an error naming rank 1", err)
	}
	out.Reset()
	notes, err := MergeNotes(&out, parts())
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "rank 1's trace was cut short") || !strings.Contains(notes[0], "first 5 events") {
		t.Fatalf("notes %q, want one for rank 1 with its 5 whole events (the start and 4 spans)", notes)
	}
	var got struct {
		Events []struct {
			Name string  `json:"name"`
			Ph   string  `json:"ph"`
			Pid  int     `json:"pid"`
			Ts   float64 `json:"ts"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("merged trace is not JSON: %v", err)
	}
	var ts []float64
	for _, e := range got.Events {
		if e.Name == startEvent {
			t.Errorf("the start event is carried into the merged trace")
		}
		if e.Pid == 1 && e.Ph == "X" {
			ts = append(ts, e.Ts)
		}
	}
	// rank 1 started 1 s after rank 0: its spans at 1000, 1010, 1020, 1030 ms.
	if want := []float64{1000e3, 1010e3, 1020e3, 1030e3}; !slices.Equal(ts, want) {
		t.Errorf("rank 1's spans at %v µs, want %v", ts, want)
	}
	if _, err := MergeNotes(&out, []Part{{"junk", 0, strings.NewReader("[1,2")}}); err == nil || !strings.Contains(err.Error(), "junk's trace") {
		t.Errorf("bytes that are no trace's start: %v, want an error naming the part", err)
	}
}

// FuzzMerge: any bytes as a part's trace give a merged trace or an error
// naming the part, never a panic.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"name":"x","ph":"X","pid":0,"tid":1,"ts":5,"dur":1}],"otherData":{"start_unix_us":7}}`))
	f.Add([]byte(`{"traceEvents":[{"name":"process_name","ph":"M","args":"x"}]}`))
	f.Add([]byte(`{"traceEvents":[null, 3, {"ts":"a"}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"traceEvents":[null]}`))
	f.Add([]byte(`{"traceEvents":[` + "\n" + `{"name":"dsgd_start","ph":"M","pid":0,"tid":0,"args":{"start_unix_us":9}},` + "\n" + `{"name":"x","ph":"X","ts":1,"du`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, salvage := range []bool{false, true} {
			var out bytes.Buffer
			parts := []Part{{"rank 0", 0, bytes.NewReader(data)}, {"rank 1", 1, strings.NewReader(`{"traceEvents":[]}`)}}
			var err error
			if salvage {
				_, err = MergeNotes(&out, parts)
			} else {
				err = Merge(&out, parts)
			}
			if err != nil && !strings.Contains(err.Error(), "rank 0") {
				t.Fatalf("error does not name the part: %v", err)
			}
			if err == nil && !json.Valid(out.Bytes()) {
				t.Fatalf("merged trace is not JSON: %s", out.String())
			}
		}
	})
}

// TestSpanCounts: integer arguments are written as the span's args, and
// cost no allocation.
func TestSpanCounts(t *testing.T) {
	var b bytes.Buffer
	t0 := time.Unix(100, 0)
	w := New(&b, t0)
	w.SpanCounts(0, 1, "conv1", "forward", t0.Add(time.Millisecond), time.Millisecond, Count{"iter", 7}, Count{"values", 42})
	w.SpanCounts(0, 1, "wait", "wait", t0, 0)
	if allocs := testing.AllocsPerRun(100, func() {
		w.SpanCounts(0, 1, "conv1", "forward", t0, time.Millisecond, Count{"iter", 7})
	}); allocs != 0 {
		t.Errorf("SpanCounts allocates %v times, want 0", allocs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Events []struct {
			Name string           `json:"name"`
			Args map[string]int64 `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &tr); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	ev := tr.Events[1:] // after the start instant
	if a := ev[0].Args; a["iter"] != 7 || a["values"] != 42 {
		t.Errorf("args %v, want iter 7 values 42", a)
	}
	if ev[1].Args != nil {
		t.Errorf("a span without counts has args %v", ev[1].Args)
	}
}
