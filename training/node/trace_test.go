package node

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/transport"
	"dsgd/protocol/scheme"
)

// span is one call of Rank.Trace.
type span struct {
	name, cat  string
	start, end time.Time
}

// TestTraceSpans: with Trace set, every rank reports each allreduce, each
// update and its waits, with sane times; the numbers are unchanged.
func TestTraceSpans(t *testing.T) {
	const n, iters = 10, 3
	for _, tc := range []struct {
		name     string
		wantComm string // the name of every comm span of a worker
		perIter  int    // comm spans per iteration
	}{
		{"sync-ring", "allreduce grads[0:10]", 1},
		{"sync-tree", "allreduce grads[0:10]", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks := [][2]int{{0, 6}, {6, 10}}
			layout := scheme.Layout{N: n, Blocks: []scheme.Range{{Lo: 0, Hi: 6}, {Lo: 6, Hi: 10}}}
			schemes, err := scheme.New(scheme.Config{Name: tc.name, Workers: 2, MaxIter: iters, Pack: true, Layout: layout})
			if err != nil {
				t.Fatal(err)
			}
			eps := transport.NewInproc(len(schemes))
			var mu sync.Mutex
			spans := make([][]span, len(schemes))
			ranks := make([]*Rank, len(schemes))
			for r := range ranks {
				params, grads := make([]float32, n), make([]float32, n)
				ranks[r] = &Rank{Scheme: schemes[r], Ep: eps[r], Params: params, Grads: grads, Timeout: 5 * time.Second,
					Computer: &fakeComputer{grads: grads, blocks: blocks, value: float32(r + 1)},
					Update: func(int) {
						for i := range params {
							params[i] -= grads[i]
						}
					},
					Trace: func(name, cat string, start time.Time, dur time.Duration) {
						mu.Lock()
						spans[r] = append(spans[r], span{name, cat, start, start.Add(dur)})
						mu.Unlock()
					},
				}
			}
			begin := time.Now()
			errs := RunAll(context.Background(), ranks)
			end := time.Now()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for r := range ranks {
				if got := ranks[r].Params[0]; got != -1.5*iters {
					t.Fatalf("rank %d param 0 = %v with tracing on, want %v", r, got, -1.5*iters)
				}
				count := map[string]int{}
				for _, s := range spans[r] {
					if s.start.Before(begin) || s.end.After(end) || s.end.Before(s.start) {
						t.Errorf("rank %d: span %s (%s) at %v..%v is outside the run", r, s.name, s.cat, s.start.Sub(begin), s.end.Sub(begin))
					}
					switch s.cat {
					case "comm":
						if s.name != tc.wantComm {
							t.Errorf("rank %d: comm span %q, want %q", r, s.name, tc.wantComm)
						}
					case "update":
						if !strings.HasPrefix(s.name, "update") && !strings.HasPrefix(s.name, "scale") {
							t.Errorf("rank %d: update span %q", r, s.name)
						}
					case "wait":
						if !strings.HasPrefix(s.name, "wait allreduce") {
							t.Errorf("rank %d: wait span %q", r, s.name)
						}
					default:
						t.Errorf("rank %d: span %q of unexpected category %q", r, s.name, s.cat)
					}
					count[s.cat]++
					if s.name == "update" {
						count["update op"]++
					}
				}
				if count["comm"] != tc.perIter*iters || count["update op"] != iters {
					t.Errorf("rank %d: %d comm and %d update spans, want %d and %d", r, count["comm"], count["update op"], tc.perIter*iters, iters)
				}
			}
		})
	}
}

func TestActionNameTrace(t *testing.T) {
	tests := []struct {
		a    scheme.Action
		want string
	}{
		{scheme.Action{Op: scheme.Allreduce, R: scheme.Range{Buf: scheme.Grads, Lo: 0, Hi: 431080}}, "allreduce grads[0:431080]"},
		{scheme.Action{Op: scheme.Send, R: scheme.Range{Buf: scheme.Grads, Lo: 6, Hi: 10}, Peer: 3}, "send grads[6:10] to 3"},
		{scheme.Action{Op: scheme.Recv, R: scheme.Range{Buf: scheme.Params, Lo: 0, Hi: 4}, Peer: 2}, "recv params[0:4] from 2"},
		{scheme.Action{Op: scheme.Broadcast, R: scheme.Range{Buf: scheme.Params, Lo: 0, Hi: 4}}, "broadcast params[0:4] from 0"},
		{scheme.Action{Op: scheme.Reduce, R: scheme.Range{Buf: scheme.Grads, Lo: 0, Hi: 4}, Peer: 1}, "reduce grads[0:4] to 1"},
		{scheme.Action{Op: scheme.Clock, Iter: 5}, "clock"},
		{scheme.Action{Op: scheme.Update, Iter: 2}, "update"},
		{scheme.Action{Op: scheme.Elastic, R: scheme.Range{Buf: scheme.Params, Lo: 0, Hi: 9}}, "elastic params[0:9]"},
	}
	for _, tc := range tests {
		if got := ActionName(tc.a); got != tc.want {
			t.Errorf("ActionName(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}
