package scheme

// broadcastID is the Done ID of the initial broadcast; the schemes'
// own IDs count up from 1.
const broadcastID = -1

// initialBroadcast runs TRL Alg. 5 line 2 before a rank's scheme starts:
// rank 0's weights reach every rank of the group, so ranks that built
// their models apart (separate processes) start from the same weights.
type initialBroadcast struct {
	inner   Rank
	n       int
	waiting bool
}

func (b *initialBroadcast) Step(ev Event) []Action {
	switch {
	case ev.Kind == Start:
		b.waiting = true
		return []Action{{Op: Broadcast, ID: broadcastID, R: Range{Params, 0, b.n}, Peer: 0}}
	case b.waiting && ev.Kind == Done && ev.ID == broadcastID:
		b.waiting = false
		return b.inner.Step(Event{Kind: Start})
	}
	return b.inner.Step(ev)
}
