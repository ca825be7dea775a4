package ps

import (
	"context"
	"fmt"
	"slices"
	"time"

	"dsgd/comm/rpc"
)

// DefaultSilence is ServerConfig.Silence's default: a worker silent this
// long (no call, no heartbeat) leaves the center until it speaks again.
const DefaultSilence = 10 * time.Second

// connLife is what the server knows of a joined connection's liveness.
// Server.ownMu guards it.
type connLife struct {
	last   time.Time // when a call last arrived or ended
	busy   bool      // a call is running: the worker waits on us
	silent []int     // its workers made to leave for silence, to rejoin
}

// joinedOver notes that worker w joined over conn; ownMu is held.
func (s *Server) joinedOver(conn *rpc.Conn, w int) {
	l := s.life[conn]
	if l == nil {
		l = &connLife{}
		s.life[conn] = l
	}
	l.last = time.Now()
	l.silent = slices.DeleteFunc(l.silent, func(v int) bool { return v == w })
}

// joinGrace is how long a join waits for the connection that holds its
// worker to close before refusing it as a duplicate: a restarted worker
// may dial before the server has seen its predecessor's connection end.
const joinGrace = time.Second

// duplicate refuses worker w joining over conn while another connection,
// still open after joinGrace, holds w: two processes were started with
// the same rank. A worker whose predecessor's connection has closed is a
// rejoin and is accepted. ownMu is held on entry and on return; it is
// let go while waiting.
func (s *Server) duplicate(ctx context.Context, w int, conn *rpc.Conn) error {
	if conn == nil {
		return nil
	}
	held, err := s.owners.Await(ctx, &s.ownMu, w, conn, joinGrace)
	if held == nil {
		return err
	}
	how := "live"
	if l := s.life[held]; l != nil && slices.Contains(l.silent, w) {
		how = fmt.Sprintf("silent since %s but connected", l.last.Format("15:04:05.000"))
	}
	return fmt.Errorf("ps: rank %d is already held by a %s worker connected from %s; refusing a second rank %d from %s (two workers started with the same --rank? a restarted worker is accepted once its predecessor's connection has closed)",
		w, how, held.RemoteAddr(), w, conn.RemoteAddr())
}

// heard records a call arriving on the connection of ctx and returns
// what to run when it ends. A connection whose workers were made to
// leave for silence has woken: they rejoin the center first, at their
// count, unless the call is their Leave.
func (s *Server) heard(ctx context.Context, op uint32) func() {
	conn := rpc.ConnFrom(ctx)
	if conn == nil {
		return func() {}
	}
	s.ownMu.Lock()
	l := s.life[conn]
	if l == nil {
		s.ownMu.Unlock()
		return func() {}
	}
	now := time.Now()
	quiet := now.Sub(l.last)
	l.busy, l.last = true, now
	var msgs []error
	if op != opLeave {
		for _, w := range l.silent {
			if s.owners.Holder(w) != conn {
				continue
			}
			iter, err := s.c.Join(ctx, w)
			if err != nil {
				msgs = append(msgs, fmt.Errorf("ps: worker %d from %s spoke again after %v of silence; rejoining it: %w", w, conn.RemoteAddr(), quiet.Round(time.Millisecond), err))
			} else {
				msgs = append(msgs, fmt.Errorf("ps: worker %d from %s spoke again after %v of silence: it rejoined at iteration %d", w, conn.RemoteAddr(), quiet.Round(time.Millisecond), iter))
			}
		}
		l.silent = l.silent[:0]
	}
	s.ownMu.Unlock()
	s.log(msgs)
	return func() {
		s.ownMu.Lock()
		l.busy, l.last = false, time.Now()
		s.ownMu.Unlock()
	}
}

// watch makes every worker whose connection has been silent for longer
// than s.silence leave the center, until ctx ends.
func (s *Server) watch(ctx context.Context) {
	t := time.NewTicker(max(s.silence/8, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.dropSilent(ctx, now)
		}
	}
}

// dropSilent is one round of watch.
func (s *Server) dropSilent(ctx context.Context, now time.Time) {
	var msgs []error
	s.ownMu.Lock()
	for _, w := range s.owners.Ranks() {
		conn := s.owners.Holder(w)
		l := s.life[conn]
		if l == nil || l.busy || now.Sub(l.last) <= s.silence || slices.Contains(l.silent, w) {
			continue
		}
		cause := fmt.Errorf("ps: worker %d from %s silent for %v (no call, no heartbeat; frozen or cut off?)", w, conn.RemoteAddr(), now.Sub(l.last).Round(time.Millisecond))
		if err := s.c.Leave(ctx, w, cause); err != nil {
			msgs = append(msgs, fmt.Errorf("%w; making it leave the center: %w", cause, err))
			continue
		}
		l.silent = append(l.silent, w)
		msgs = append(msgs, fmt.Errorf("%w: it left the center and no longer holds the others back; it rejoins when it speaks again", cause))
	}
	s.ownMu.Unlock()
	s.log(msgs)
}

func (s *Server) log(msgs []error) {
	if s.elog == nil {
		return
	}
	for _, err := range msgs {
		s.elog(err)
	}
}

// connAddr is the address of the client whose call ctx serves, or
// "an unknown address" outside a connection.
func connAddr(ctx context.Context) string {
	if c := rpc.ConnFrom(ctx); c != nil {
		return c.RemoteAddr()
	}
	return "an unknown address"
}
