package collective

import "fmt"

// ParamServerSchedules expresses the parameter-server pattern of p
// workers as schedules over p+1 ranks (the server last), so that it is
// costed and verified by the same code as the collectives: worker w sends
// its n floats in round w and receives the result in round p+w; the
// server receives from every worker (the first copied, the rest added),
// then sends to every worker, one message per round.
func ParamServerSchedules(p, n int) []Schedule {
	s := make([]Schedule, p+1)
	none := Transfer{Peer: NoPeer}
	for r := range p + 1 {
		s[r] = Schedule{Rank: r, Size: p + 1, N: n}
	}
	for w := range p {
		op := Add
		if w == 0 {
			op = Copy
		}
		s[w].Steps = []Step{
			{Round: w, Send: Transfer{Peer: p, Lo: 0, Hi: n}, Recv: none},
			{Round: p + w, Send: none, Recv: Transfer{Peer: p, Lo: 0, Hi: n}, Op: Copy},
		}
		s[p].Steps = append(s[p].Steps, Step{Round: w, Send: none, Recv: Transfer{Peer: w, Lo: 0, Hi: n}, Op: op})
	}
	for w := range p {
		s[p].Steps = append(s[p].Steps, Step{Round: p + w, Send: Transfer{Peer: w, Lo: 0, Hi: n}, Recv: none})
	}
	return s
}

// Pattern is what a group's schedules say about a communication pattern
// without running it.
type Pattern struct {
	Msgs       int   // sequential messages on the critical path (Verify's depth)
	MaxBytes   int64 // bytes sent plus received by the busiest rank
	TotalBytes int64 // bytes sent by all ranks together
}

// PatternOf verifies a group's schedules and sums their costs.
func PatternOf(scheds []Schedule) (Pattern, error) {
	depth, err := Verify(scheds)
	if err != nil {
		return Pattern{}, fmt.Errorf("collective: pattern: %w", err)
	}
	m := Pattern{Msgs: depth}
	for _, s := range scheds {
		c := s.Cost()
		m.MaxBytes = max(m.MaxBytes, c.BytesSent+c.BytesRecv)
		m.TotalBytes += c.BytesSent
	}
	return m, nil
}

// TreePattern is the pattern of the tree allreduce of n floats over p
// ranks (FireCaffe's reduction tree).
func TreePattern(p, n int) (Pattern, error) {
	s := make([]Schedule, p)
	for r := range p {
		s[r] = TreeAllreduce(r, p, n)
	}
	return PatternOf(s)
}

// ParamServerPattern is the pattern of ParamServerSchedules(p, n).
func ParamServerPattern(p, n int) (Pattern, error) { return PatternOf(ParamServerSchedules(p, n)) }

// Predict is the α-β time of a pattern in seconds: alpha seconds per
// sequential message plus beta seconds per byte through the busiest rank
// (FireCaffe Eq. 3 and 4).
func (m Pattern) Predict(alpha, beta float64) float64 {
	return alpha*float64(m.Msgs) + beta*float64(m.MaxBytes)
}
