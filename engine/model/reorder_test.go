package model

import "testing"

// TestReorderProbe: the probe lists every layer once, in forward order,
// and counts no reorder time in the warm-up passes.
func TestReorderProbe(t *testing.T) {
	tn := lenetNet()
	n := tn.build(t, Options{Seed: 1}, 2)
	p := NewReorderProbe(n, 1)
	n.ForwardBackward()
	ls := p.Layers()
	infos := n.Layers()
	if len(ls) != len(infos) {
		t.Fatalf("%d layers probed, want %d", len(ls), len(infos))
	}
	for i, l := range ls {
		if l.Layer != infos[i].Name {
			t.Errorf("layer %d is %s, want %s", i, l.Layer, infos[i].Name)
		}
		if l.Forward != 0 || l.Backward != 0 {
			t.Errorf("%s: reorder time %v, %v counted in the warm-up pass", l.Layer, l.Forward, l.Backward)
		}
	}
	if p.Weights() != 0 {
		t.Errorf("weight reorders %v counted in the warm-up pass", p.Weights())
	}
	n.ForwardBackward() // counted: whatever oneDNN reordered, none is negative
	for _, l := range p.Layers() {
		if l.Forward < 0 || l.Backward < 0 {
			t.Errorf("%s: negative reorder time %v, %v", l.Layer, l.Forward, l.Backward)
		}
	}
}
