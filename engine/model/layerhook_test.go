package model

import (
	"testing"
	"time"
)

// TestLayerHookTrace: the layer hook sees every layer's forward pass, in
// order, and the backward pass of every layer that runs one, in reverse
// order, with the times Layers accumulates; turned off it costs no
// allocation.
func TestLayerHookTrace(t *testing.T) {
	for _, tn := range []testNet{mlpNet(), lenetNet(), splitNet()} {
		t.Run(tn.name, func(t *testing.T) {
			n := tn.build(t, Options{Seed: 1}, 2)
			type call struct {
				layer    string
				backward bool
				start    time.Time
				dur      time.Duration
			}
			var calls []call
			n.SetLayerHook(func(layer string, backward bool, start time.Time, dur time.Duration) {
				calls = append(calls, call{layer, backward, start, dur})
			})
			before := time.Now()
			n.ForwardBackward()
			after := time.Now()
			infos := n.Layers()
			var want []call
			for _, li := range infos {
				want = append(want, call{layer: li.Name, dur: li.Forward})
			}
			for i := len(infos) - 1; i >= 0; i-- {
				if infos[i].Backprop {
					want = append(want, call{layer: infos[i].Name, backward: true, dur: infos[i].Backward})
				}
			}
			if len(calls) != len(want) {
				t.Fatalf("%d hook calls, want %d: %v", len(calls), len(want), calls)
			}
			last := before
			for i, c := range calls {
				w := want[i]
				if c.layer != w.layer || c.backward != w.backward || c.dur != w.dur {
					t.Errorf("call %d: %s backward=%v %v, want %s backward=%v %v", i, c.layer, c.backward, c.dur, w.layer, w.backward, w.dur)
				}
				if c.start.Before(last) || c.start.Add(c.dur).After(after) {
					t.Errorf("call %d (%s) at %v+%v is out of order or outside the pass", i, c.layer, c.start.Sub(before), c.dur)
				}
				last = c.start.Add(c.dur)
			}

			n.SetLayerHook(nil)
			if allocs := testing.AllocsPerRun(5, func() { n.ForwardBackward() }); allocs != 0 {
				t.Errorf("ForwardBackward with no layer hook allocates %v times, want 0", allocs)
			}
			if len(calls) != len(want) {
				t.Fatalf("the hook ran after being turned off")
			}
		})
	}
}
