package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Part is one process's trace for Merge.
type Part struct {
	// Name labels the part's process in the merged trace ("rank 1").
	Name string
	// Pid is the process id its events take in the merged trace.
	Pid int
	// R reads the trace, as a Writer wrote it.
	R io.Reader
}

// Merge writes the traces of several processes as one: each part's
// events move to process Pid (named "NAME: its own process name"), and
// their times onto the earliest part's clock by the start instants the
// Writers recorded. A part without its start (a trace of another writer)
// keeps its times as they are. The parts are read whole; the merged trace
// is written in one piece. A part cut short (its process died before its
// Writer closed) is refused; MergeNotes keeps what it holds.
func Merge(w io.Writer, parts []Part) error {
	_, err := merge(w, parts, false)
	return err
}

// MergeNotes is Merge that also takes the parts cut short, as a killed
// process leaves its trace: the events it wrote whole before the cut,
// on the clock its Writer's first event gives. It returns a note for each
// such part.
func MergeNotes(w io.Writer, parts []Part) ([]string, error) {
	return merge(w, parts, true)
}

// trace is a Writer's trace as Merge reads it.
type trace struct {
	Events    []map[string]any `json:"traceEvents"`
	OtherData struct {
		StartUnixUs *int64 `json:"start_unix_us"`
	} `json:"otherData"`
}

// startEvent names the metadata event a Writer opens its trace with: its
// start instant, so that a trace cut short can still be put on the
// merged clock.
const startEvent = "dsgd_start"

func merge(w io.Writer, parts []Part, salvage bool) ([]string, error) {
	traces := make([]trace, len(parts))
	var notes []string
	var origin int64
	found := false
	for i, p := range parts {
		data, err := io.ReadAll(p.R)
		if err == nil {
			err = json.Unmarshal(data, &traces[i])
		}
		if err != nil && salvage {
			var n int
			if traces[i], n = cut(data); n >= 0 {
				notes = append(notes, fmt.Sprintf("%s's trace was cut short (its process died): its first %d events are merged", p.Name, n))
				err = nil
			}
		}
		if err != nil {
			return notes, fmt.Errorf("timeline: %s's trace: %w", p.Name, err)
		}
		t := &traces[i]
		if t.OtherData.StartUnixUs == nil {
			// A trace cut short: its first event has the start.
			for _, e := range t.Events {
				if e != nil && e["name"] == startEvent {
					if args, ok := e["args"].(map[string]any); ok {
						if v, ok := args["start_unix_us"].(float64); ok {
							s := int64(v)
							t.OtherData.StartUnixUs = &s
						}
					}
					break
				}
			}
		}
		if s := t.OtherData.StartUnixUs; s != nil && (!found || *s < origin) {
			origin, found = *s, true
		}
	}
	var events []map[string]any
	for i, p := range parts {
		var shift float64
		if s := traces[i].OtherData.StartUnixUs; s != nil {
			shift = float64(*s - origin)
		}
		named := false
		for _, e := range traces[i].Events {
			if e == nil || e["name"] == startEvent {
				continue // a null event: nothing to draw; the start: in otherData
			}
			e["pid"] = p.Pid
			if ts, ok := e["ts"].(float64); ok {
				e["ts"] = ts + shift
			}
			if e["name"] == "process_name" && e["ph"] == "M" {
				if args, ok := e["args"].(map[string]any); ok {
					if named {
						continue // one name per merged process
					}
					args["name"] = fmt.Sprintf("%s: %v", p.Name, args["name"])
					named = true
				}
			}
			events = append(events, e)
		}
		if !named {
			events = append(events, map[string]any{"name": "process_name", "ph": "M", "pid": p.Pid, "tid": 0, "args": map[string]any{"name": p.Name}})
		}
		events = append(events, map[string]any{"name": "process_sort_index", "ph": "M", "pid": p.Pid, "tid": 0, "args": map[string]any{"sort_index": p.Pid}})
	}
	out := map[string]any{"traceEvents": events, "displayTimeUnit": "ms"}
	if found {
		out["otherData"] = map[string]any{"start_unix_us": origin}
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(out); err != nil {
		return notes, fmt.Errorf("timeline: merged trace: %w", err)
	}
	return notes, nil
}

// cut reads a Writer's trace that ends before its Close: the events of
// its traceEvents array decoded whole before the cut, and their number;
// -1 when data is not the start of such a trace.
func cut(data []byte) (trace, int) {
	var t trace
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return t, -1
	}
	if tok, err := dec.Token(); err != nil || tok != "traceEvents" {
		return t, -1
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return t, -1
	}
	for dec.More() {
		var e map[string]any
		if err := dec.Decode(&e); err != nil {
			break
		}
		t.Events = append(t.Events, e)
	}
	return t, len(t.Events)
}
