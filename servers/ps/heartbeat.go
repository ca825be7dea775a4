package ps

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"dsgd/comm/rpc"
)

// heartbeat sends a ping on a Client's connection whenever it has been
// idle for an interval the server asked for (opInfo), so that the server
// can tell a worker that computes from one that froze
// (ServerConfig.Silence). A ping waits behind a call in progress: the
// server counts a running call as life.
type heartbeat struct {
	busy atomic.Int32 // calls in progress
	last atomic.Int64 // when the last call ended, UnixNano

	once sync.Once
	quit chan struct{}
	wg   sync.WaitGroup
}

// start pings over rc every interval of idleness; no interval, no pings.
func (h *heartbeat) start(rc *rpc.Client, interval time.Duration) {
	h.quit = make(chan struct{})
	h.last.Store(time.Now().UnixNano())
	if interval <= 0 {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.quit:
				return
			case now := <-t.C:
				if h.busy.Load() > 0 || now.UnixNano()-h.last.Load() < int64(interval) {
					continue
				}
				// No deadline of our own: the rpc timeout bounds the
				// answer, and a ping that gave up early would make the
				// connection unusable. An error is the connection's: the
				// worker's next call reports it.
				var resp rpc.Response
				if rc.Call(context.Background(), &rpc.Request{Op: opPing, Ints: [rpc.NumInts]int64{-1}}, &resp) == nil {
					h.last.Store(time.Now().UnixNano())
				}
			}
		}
	}()
}

// done records that a call ended.
func (h *heartbeat) done() {
	h.last.Store(time.Now().UnixNano())
	h.busy.Add(-1)
}

// stop ends the pings and waits for the last one.
func (h *heartbeat) stop() {
	h.once.Do(func() {
		if h.quit != nil {
			close(h.quit)
		}
	})
	h.wg.Wait()
}
