package collective

import (
	"fmt"
	"math/bits"
	"strings"
	"testing"
)

var testSizes = []int{1, 2, 3, 4, 5, 7, 8, 16}

// testLens returns the buffer lengths every test runs for group size p.
func testLens(p int) []int {
	seen := map[int]bool{}
	var out []int
	for _, n := range []int{0, 1, 3, p - 1, p, 1000, 4097} {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// group builds the schedules of all ranks with gen.
func group(p int, gen func(rank int) Schedule) []Schedule {
	out := make([]Schedule, p)
	for r := range out {
		out[r] = gen(r)
	}
	return out
}

// generator is one collective's schedules, named for test output, with the
// depth Verify must find for n >= p (or -1 to skip that check).
type generator struct {
	name  string
	gen   func(rank, p, n int) Schedule
	depth func(p int) int
}

func rdDepth(p int) int {
	q := 1 << (bits.Len(uint(p)) - 1)
	d := bits.Len(uint(q)) - 1
	if q != p {
		d += 2
	}
	return d
}

func generators(p int) []generator {
	gs := []generator{
		{"tree-allreduce", TreeAllreduce, func(p int) int { return 2 * ceilLog2(p) }},
		{"ring-allreduce", RingAllreduce, func(p int) int { return 2 * (p - 1) }},
		{"rd-allreduce", RecursiveDoublingAllreduce, rdDepth},
		{"ring-reducescatter", RingReduceScatter, func(p int) int { return p - 1 }},
		{"ring-allgather", RingAllgather, func(p int) int { return p - 1 }},
	}
	for root := range p {
		gs = append(gs,
			generator{fmt.Sprintf("tree-reduce-root%d", root), func(r, p, n int) Schedule { return TreeReduce(r, p, root, n) }, ceilLog2},
			generator{fmt.Sprintf("tree-broadcast-root%d", root), func(r, p, n int) Schedule { return TreeBroadcast(r, p, root, n) }, ceilLog2})
	}
	return gs
}

func TestSchedulesVerify(t *testing.T) {
	for _, p := range append(testSizes, 6, 9, 12, 13, 17, 31, 32, 33) {
		for _, g := range generators(p) {
			for _, n := range testLens(p) {
				scheds := group(p, func(r int) Schedule { return g.gen(r, p, n) })
				depth, err := Verify(scheds)
				if err != nil {
					t.Fatalf("%s p=%d n=%d: %v", g.name, p, n, err)
				}
				want := g.depth(p)
				if n == 0 {
					want = 0
				}
				if n >= p && depth != want {
					t.Errorf("%s p=%d n=%d: depth %d, want %d", g.name, p, n, depth, want)
				}
				if n < p && depth > want {
					t.Errorf("%s p=%d n=%d: depth %d exceeds %d", g.name, p, n, depth, want)
				}
			}
		}
	}
}

func TestBarrierSchedule(t *testing.T) {
	for _, p := range append(testSizes, 6, 9, 33) {
		depth, err := Verify(group(p, func(r int) Schedule { return DisseminationBarrier(r, p) }))
		if err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		if depth != ceilLog2(p) {
			t.Errorf("p=%d: depth %d, want %d", p, depth, ceilLog2(p))
		}
	}
}

func TestTreeDepth(t *testing.T) {
	// The root of a reduce receives once per round: ceil(log2 p) steps,
	// in rounds 0..ceil(log2 p)-1 (FireCaffe Eq. 4's log2 p).
	for _, tc := range []struct{ p, rounds int }{{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {7, 3}, {8, 3}, {9, 4}, {16, 4}, {17, 5}} {
		for root := range tc.p {
			c := TreeReduce(root, tc.p, root, 10).Cost()
			if c.Steps != tc.rounds || c.Rounds != tc.rounds || c.MsgsRecv != tc.rounds || c.MsgsSent != 0 {
				t.Errorf("p=%d root=%d: root cost %+v, want %d receive steps", tc.p, root, c, tc.rounds)
			}
			for r := range tc.p {
				if r == root {
					continue
				}
				if c := TreeReduce(r, tc.p, root, 10).Cost(); c.MsgsSent != 1 || c.Rounds > tc.rounds {
					t.Errorf("p=%d root=%d rank %d: cost %+v, want one send within %d rounds", tc.p, root, r, c, tc.rounds)
				}
				if c := TreeBroadcast(r, tc.p, root, 10).Cost(); c.MsgsRecv != 1 || c.BytesRecv != 40 {
					t.Errorf("p=%d root=%d rank %d: broadcast cost %+v, want one 40-byte receive", tc.p, root, r, c)
				}
			}
		}
	}
}

func TestRingCost(t *testing.T) {
	for _, p := range testSizes {
		for _, n := range testLens(p) {
			var totalReduced int64
			for r := range p {
				c := RingAllreduce(r, p, n).Cost()
				lr0, hr0 := Chunk(r, p, n)
				lr1, hr1 := Chunk((r+1)%p, p, n)
				lrm, hrm := Chunk((r-1+p)%p, p, n)
				// Reduce-scatter sends every chunk but r and receives every
				// chunk but r-1; allgather sends every chunk but r+1 and
				// receives every chunk but r.
				wantS := 4 * int64(2*n-(hr0-lr0)-(hr1-lr1))
				wantR := 4 * int64(2*n-(hr0-lr0)-(hrm-lrm))
				if p == 1 {
					wantS, wantR = 0, 0
				}
				if c.BytesSent != wantS || c.BytesRecv != wantR {
					t.Errorf("p=%d n=%d rank %d: sent %d received %d, want %d and %d", p, n, r, c.BytesSent, c.BytesRecv, wantS, wantR)
				}
				// Within one float of each of the two chunks left out: 2(p-1)/p·n.
				ideal := 8 * float64(p-1) / float64(p) * float64(n)
				if d := float64(c.BytesSent) - ideal; d > 8 || d < -8 {
					t.Errorf("p=%d n=%d rank %d: sent %d bytes, ideal %.1f", p, n, r, c.BytesSent, ideal)
				}
				if c.Rounds > 2*(p-1) {
					t.Errorf("p=%d n=%d: %d rounds", p, n, c.Rounds)
				}
				totalReduced += c.FloatsReduced
			}
			// Each element is added p-1 times, once per contribution.
			if totalReduced != int64((p-1)*n) {
				t.Errorf("p=%d n=%d: %d floats reduced in all, want %d", p, n, totalReduced, (p-1)*n)
			}
		}
	}
}

func TestCostTotals(t *testing.T) {
	for _, p := range testSizes {
		for _, g := range generators(p) {
			for _, n := range testLens(p) {
				var sent, recv, msgsS, msgsR int64
				for r := range p {
					s := g.gen(r, p, n)
					c := s.Cost()
					sent += c.BytesSent
					recv += c.BytesRecv
					msgsS += int64(c.MsgsSent)
					msgsR += int64(c.MsgsRecv)
					if c.Steps != len(s.Steps) {
						t.Errorf("%s: Steps %d, len %d", g.name, c.Steps, len(s.Steps))
					}
					if c.ScratchLen > n || (c.FloatsReduced > 0) != (c.ScratchLen > 0) {
						t.Errorf("%s p=%d n=%d: scratch %d, reduced %d", g.name, p, n, c.ScratchLen, c.FloatsReduced)
					}
				}
				if sent != recv || msgsS != msgsR {
					t.Errorf("%s p=%d n=%d: %d bytes/%d msgs sent, %d/%d received", g.name, p, n, sent, msgsS, recv, msgsR)
				}
			}
		}
	}
	// Tree allreduce: each element is added p-1 times, at one rank each.
	for _, p := range testSizes {
		var reduced int64
		for r := range p {
			reduced += TreeAllreduce(r, p, 100).Cost().FloatsReduced
		}
		if reduced != int64(100*(p-1)) {
			t.Errorf("tree p=%d: %d floats reduced, want %d", p, reduced, 100*(p-1))
		}
	}
}

func TestChunk(t *testing.T) {
	for _, p := range testSizes {
		for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 100, 4097} {
			prev := 0
			for i := range p {
				lo, hi := Chunk(i, p, n)
				if lo != prev || hi < lo || hi-lo > n/p+1 || hi-lo < n/p {
					t.Fatalf("p=%d n=%d chunk %d = [%d,%d), previous ended at %d", p, n, i, lo, hi, prev)
				}
				prev = hi
			}
			if prev != n {
				t.Fatalf("p=%d n=%d: chunks end at %d", p, n, prev)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Transfer{1, 0, 4}
	for _, tc := range []struct {
		name string
		s    Schedule
		want string // substring of the error, "" for valid
	}{
		{"valid", Schedule{0, 2, 4, 0, []Step{{0, ok, none, Copy}, {1, none, ok, Add}}}, ""},
		{"empty", Schedule{0, 1, 0, 0, nil}, ""},
		{"bad rank", Schedule{2, 2, 4, 0, nil}, "rank 2 of size 2"},
		{"negative n", Schedule{0, 2, -1, 0, nil}, "buffer length"},
		{"self", Schedule{1, 2, 4, 0, []Step{{0, ok, none, Copy}}}, "bad peer 1"},
		{"peer out of range", Schedule{0, 2, 4, 0, []Step{{0, Transfer{2, 0, 1}, none, Copy}}}, "bad peer 2"},
		{"range past n", Schedule{0, 2, 4, 0, []Step{{0, Transfer{1, 0, 5}, none, Copy}}}, "range outside"},
		{"reversed range", Schedule{0, 2, 4, 0, []Step{{0, none, Transfer{1, 3, 2}, Copy}}}, "range outside"},
		{"rounds not increasing", Schedule{0, 2, 4, 0, []Step{{1, ok, none, Copy}, {1, ok, none, Copy}}}, "round 1 not after 1"},
		{"idle step", Schedule{0, 2, 4, 0, []Step{{0, none, none, Copy}}}, "neither sends nor receives"},
		{"bad op", Schedule{0, 2, 4, 0, []Step{{0, none, ok, Op(7)}}}, "unknown op"},
		{"copy over own send", Schedule{0, 2, 4, 0, []Step{{0, Transfer{1, 0, 3}, Transfer{1, 2, 4}, Copy}}}, "changes the range it sends"},
		{"add over a shifted range", Schedule{0, 2, 4, 0, []Step{{0, Transfer{1, 0, 3}, Transfer{1, 1, 4}, Add}}}, "changes the range it sends"},
		{"negative segment", Schedule{0, 2, 4, -1, nil}, "segment -1"},
		{"add over own send is fine", Schedule{0, 2, 4, 0, []Step{{0, ok, ok, Add}}}, ""},
	} {
		err := tc.s.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	a := Transfer{1, 0, 2}
	b := Transfer{0, 0, 2}
	for _, tc := range []struct {
		name   string
		scheds []Schedule
		want   string
	}{
		{"both receive first", []Schedule{
			{0, 2, 2, 0, []Step{{0, none, a, Copy}, {1, a, none, Copy}}},
			{1, 2, 2, 0, []Step{{0, none, b, Copy}, {1, b, none, Copy}}},
		}, "deadlock"},
		{"length differs", []Schedule{
			{0, 2, 2, 0, []Step{{0, a, none, Copy}}},
			{1, 2, 2, 0, []Step{{0, none, Transfer{0, 0, 1}, Copy}}},
		}, "length differ"},
		{"round differs", []Schedule{
			{0, 2, 2, 0, []Step{{0, a, none, Copy}}},
			{1, 2, 2, 0, []Step{{1, none, b, Copy}}},
		}, "round or length"},
		{"peer finished", []Schedule{
			{0, 2, 2, 0, []Step{{0, a, none, Copy}}},
			{1, 2, 2, 0, nil},
		}, "has finished"},
		{"receive never sent", []Schedule{
			{0, 2, 2, 0, nil},
			{1, 2, 2, 0, []Step{{0, none, b, Copy}}},
		}, "deadlock"},
		{"wrong rank", []Schedule{{1, 2, 2, 0, nil}, {0, 2, 2, 0, nil}}, "schedule 0 is for rank 1"},
		{"n differs", []Schedule{{0, 2, 2, 0, nil}, {1, 2, 3, 0, nil}}, "n=3"},
		{"segment differs", []Schedule{{0, 2, 2, 0, nil}, {1, 2, 2, 5, nil}}, "segment=5"},
		{"invalid", []Schedule{{0, 1, 2, 0, []Step{{0, none, none, Copy}}}}, "rank 0:"},
		{"none", nil, "no schedules"},
	} {
		_, err := Verify(tc.scheds)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Verify() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestGeneratorsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"size 0":        func() { RingAllreduce(0, 0, 1) },
		"rank too big":  func() { TreeAllreduce(3, 3, 1) },
		"negative n":    func() { RecursiveDoublingAllreduce(0, 2, -1) },
		"root too big":  func() { TreeReduce(0, 2, 2, 1) },
		"negative root": func() { TreeBroadcast(0, 2, -1, 1) },
		"size too big":  func() { DisseminationBarrier(0, MaxSize+1) },
		"bad algorithm": func() { AllreduceSchedule(Algorithm(9), 0, 2, 1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "collective: ") {
					t.Errorf("%s: recovered %v, want a collective: panic", name, r)
				}
			}()
			f()
		}()
	}
}

func TestStepString(t *testing.T) {
	s := Step{3, Transfer{1, 0, 5}, Transfer{2, 5, 9}, Add}
	if got, want := s.String(), "r3 send[0,5)->1 recv[5,9)<-2 add"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := Op(9).String(); got != "Op(9)" {
		t.Errorf("Op(9).String() = %q", got)
	}
}

func TestSegments(t *testing.T) {
	for _, tc := range []struct {
		seg  int
		t    Transfer
		want int
	}{
		{0, Transfer{1, 0, 100}, 1},
		{0, none, 0},
		{10, none, 0},
		{10, Transfer{1, 5, 5}, 1}, // an empty message is still a message
		{10, Transfer{1, 0, 10}, 1},
		{10, Transfer{1, 0, 11}, 2},
		{10, Transfer{1, 3, 33}, 3},
	} {
		s := Schedule{Segment: tc.seg}
		if got := s.Segments(tc.t); got != tc.want {
			t.Errorf("Segment %d, %v: %d segments, want %d", tc.seg, tc.t, got, tc.want)
		}
		// The segments tile the transfer.
		prev := tc.t.Lo
		for k := range s.Segments(tc.t) {
			lo, hi := s.segment(tc.t, k)
			if lo != prev || hi < lo || (tc.seg > 0 && hi-lo > tc.seg) {
				t.Errorf("Segment %d, %v: segment %d = [%d,%d)", tc.seg, tc.t, k, lo, hi)
			}
			prev = hi
		}
		if tc.t.Active() && prev != tc.t.Hi {
			t.Errorf("Segment %d, %v: segments end at %d", tc.seg, tc.t, prev)
		}
	}
	// Cost counts segments and sizes scratch to one.
	s := RingAllreduce(0, 2, 100)
	s.Segment = 7
	c := s.Cost()
	if c.MsgsSent != 2*8 || c.MsgsRecv != 2*8 || c.ScratchLen != 7 || c.BytesSent != 400 {
		t.Errorf("ring p=2 n=100 segment 7: %+v", c)
	}
}
