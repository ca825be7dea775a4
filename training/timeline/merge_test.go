package timeline

import (
	"bytes"
	"encoding/json"
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

// FuzzMerge: any bytes as a part's trace give a merged trace or an error
// naming the part, never a panic.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"name":"x","ph":"X","pid":0,"tid":1,"ts":5,"dur":1}],"otherData":{"start_unix_us":7}}`))
	f.Add([]byte(`{"traceEvents":[{"name":"process_name","ph":"M","args":"x"}]}`))
	f.Add([]byte(`{"traceEvents":[null, 3, {"ts":"a"}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"traceEvents":[null]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		err := Merge(&out, []Part{{"rank 0", 0, bytes.NewReader(data)}, {"rank 1", 1, strings.NewReader(`{"traceEvents":[]}`)}})
		if err != nil && !strings.Contains(err.Error(), "rank 0") {
			t.Fatalf("error does not name the part: %v", err)
		}
		if err == nil && !json.Valid(out.Bytes()) {
			t.Fatalf("merged trace is not JSON: %s", out.String())
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
	if a := tr.Events[0].Args; a["iter"] != 7 || a["values"] != 42 {
		t.Errorf("args %v, want iter 7 values 42", a)
	}
	if tr.Events[1].Args != nil {
		t.Errorf("a span without counts has args %v", tr.Events[1].Args)
	}
}
