package scheme

import (
	"testing"
)

// driveOne runs a one-worker rank of c to its end with no data, and
// returns, for every iteration, the fragments (by Lo) whose
// pseudo-gradient was taken after it (a Copy into Delta) and whose
// outer step landed (a Copy or Scale of Params).
func driveOne(t *testing.T, c Config) (sent, landed map[int][]int) {
	t.Helper()
	ranks, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	rk := ranks[0]
	sent, landed = map[int][]int{}, map[int][]int{}
	iter := c.StartIter
	queue := []Event{{Kind: Start}}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 100000 {
			t.Fatal("the rank never finished")
		}
		ev := queue[0]
		queue = queue[1:]
		for _, a := range rk.Step(ev) {
			switch {
			case a.Op == Compute:
				queue = append(queue, Event{Kind: ComputeDone, Loss: 1})
			case a.Op.IsComm():
				queue = append(queue, Event{Kind: Done, ID: a.ID})
			case a.Op == Copy && a.R.Buf == Delta:
				sent[iter-1] = append(sent[iter-1], a.R.Lo)
			case (a.Op == Copy || a.Op == Scale) && a.R.Buf == Params:
				landed[iter-1] = append(landed[iter-1], a.R.Lo)
			case a.Op == IterDone:
				iter = a.Iter + 1
			case a.Op == Finish:
				return sent, landed
			}
		}
	}
	t.Fatal("the rank stopped without finishing")
	return
}
