package ranks

import (
	"context"
	"slices"
	"sync"
	"time"

	"dsgd/comm/rpc"
)

// Table is which connection holds each rank, and which connections' ends
// the server watches. The zero Table is empty and ready; the caller's
// mutex guards it.
type Table struct {
	owner   map[int]*rpc.Conn
	watched map[*rpc.Conn]bool
}

// Await waits until rank is free or held by conn, letting the locked mu
// go while it waits for the holder's connection to end, for at most
// grace: a restarted worker may dial before the server has seen its
// predecessor's connection end. It returns nil when conn may take rank,
// and the holder when grace ran out with it still holding rank (a second
// live worker of that rank), or ctx's error. mu is held on entry and on
// return.
func (t *Table) Await(ctx context.Context, mu sync.Locker, rank int, conn *rpc.Conn, grace time.Duration) (*rpc.Conn, error) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for {
		held := t.owner[rank]
		if held == nil || held == conn {
			return nil, nil
		}
		mu.Unlock()
		expired := false
		select {
		case <-held.Done():
		case <-timer.C:
			expired = true
		case <-ctx.Done():
		}
		mu.Lock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if expired && t.owner[rank] == held {
			return held, nil
		}
	}
}

// Take gives rank to conn and reports whether conn's end is not watched
// yet: the caller then registers, once, what frees conn's ranks when it
// ends (rpc.Conn.OnClose, calling Drop).
func (t *Table) Take(rank int, conn *rpc.Conn) (watch bool) {
	if t.owner == nil {
		t.owner, t.watched = map[int]*rpc.Conn{}, map[*rpc.Conn]bool{}
	}
	t.owner[rank] = conn
	watch = !t.watched[conn]
	t.watched[conn] = true
	return watch
}

// Holder is the connection that holds rank, or nil.
func (t *Table) Holder(rank int) *rpc.Conn { return t.owner[rank] }

// Free forgets rank's holder: its worker left in order.
func (t *Table) Free(rank int) { delete(t.owner, rank) }

// Drop frees the ranks conn holds and forgets conn (it ended), and
// returns those ranks in order.
func (t *Table) Drop(conn *rpc.Conn) []int {
	var gone []int
	for r, c := range t.owner {
		if c == conn {
			gone = append(gone, r)
			delete(t.owner, r)
		}
	}
	delete(t.watched, conn)
	slices.Sort(gone)
	return gone
}

// Ranks returns the held ranks in order.
func (t *Table) Ranks() []int {
	rs := make([]int, 0, len(t.owner))
	for r := range t.owner {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	return rs
}

// Watched is the number of connections whose end is watched: those that
// took a rank and have not been dropped.
func (t *Table) Watched() int { return len(t.watched) }
