package collective

import "testing"

// TestPatterns: the schedules say the parameter server grows with p and
// the tree with log p, as FireCaffe's Eq. 3 and 4 do.
func TestPatterns(t *testing.T) {
	const n = 1000
	must := func(m Pattern, err error) Pattern {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct{ p, treeMsgs int }{{2, 2}, {4, 4}, {8, 6}, {16, 8}, {5, 6}} {
		ps, tr := must(ParamServerPattern(c.p, n)), must(TreePattern(c.p, n))
		if ps.Msgs != 2*c.p || ps.MaxBytes != int64(2*c.p*4*n) || ps.TotalBytes != int64(2*c.p*4*n) {
			t.Errorf("p=%d PS pattern %+v", c.p, ps)
		}
		if tr.Msgs != c.treeMsgs || tr.MaxBytes != int64(c.treeMsgs*4*n) || tr.TotalBytes != int64(2*(c.p-1)*4*n) {
			t.Errorf("p=%d tree pattern %+v", c.p, tr)
		}
	}
	// With alpha 0 the ratios are exact: PS x8, tree x4 from p=2 to 16.
	a := must(ParamServerPattern(16, n)).Predict(0, 1) / must(ParamServerPattern(2, n)).Predict(0, 1)
	b := must(TreePattern(16, n)).Predict(0, 1) / must(TreePattern(2, n)).Predict(0, 1)
	if a != 8 || b != 4 {
		t.Errorf("ratios PS %v tree %v", a, b)
	}
	// Alpha counts the critical path's messages.
	if got := must(TreePattern(8, n)).Predict(1, 0); got != 6 {
		t.Errorf("tree p=8 with beta 0: %v, want 6 messages", got)
	}
}
