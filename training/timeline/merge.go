package timeline

import (
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
// is written in one piece.
func Merge(w io.Writer, parts []Part) error {
	type trace struct {
		Events    []map[string]any `json:"traceEvents"`
		OtherData struct {
			StartUnixUs *int64 `json:"start_unix_us"`
		} `json:"otherData"`
	}
	traces := make([]trace, len(parts))
	var origin int64
	found := false
	for i, p := range parts {
		if err := json.NewDecoder(p.R).Decode(&traces[i]); err != nil {
			return fmt.Errorf("timeline: %s's trace: %w", p.Name, err)
		}
		if s := traces[i].OtherData.StartUnixUs; s != nil && (!found || *s < origin) {
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
			if e == nil {
				continue // a null event: nothing to draw
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
		return fmt.Errorf("timeline: merged trace: %w", err)
	}
	return nil
}
