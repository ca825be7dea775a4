package transporttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/transport"
)

// NewGroup returns the endpoints of a fresh, fully connected group of size
// ranks, indexed by rank. The suite closes them at the end of the subtest
// that asked for them; an implementation may register more cleanup on t.
type NewGroup func(t *testing.T, size int) []transport.Endpoint

// Options adapts the suite to a transport.
type Options struct {
	// FloatBytes is how many bytes one float32 value counts for in Stats:
	// 4 (the default, when 0), or 2 for fp16 compression.
	FloatBytes int
	// LargeBytes is the size of the large-message test, in bytes of
	// float32 payload; 0 means 64 MiB, or 8 MiB under the race detector.
	LargeBytes int
	// CloseKeepsPeers, when set, says why closing an endpoint does not
	// fail its peers' calls (transport.Sub leaves its parent open), and
	// CloseUnblocksPeers is skipped with it.
	CloseKeepsPeers string
}

// bound is how long any single step of the suite may take before the
// transport is declared hung.
const bound = 20 * time.Second

// Run runs the conformance suite with the default Options.
func Run(t *testing.T, newGroup NewGroup) {
	RunOptions(t, newGroup, Options{})
}

// RunOptions runs the conformance suite against the transport that
// newGroup creates, each check in its own subtest.
func RunOptions(t *testing.T, newGroup NewGroup, o Options) {
	if o.FloatBytes == 0 {
		o.FloatBytes = 4
	}
	if o.LargeBytes == 0 {
		o.LargeBytes = 64 << 20
		if raceEnabled {
			o.LargeBytes = 8 << 20
		}
	}
	s := &suite{newGroup: newGroup, o: o}
	t.Run("RankSize", s.rankSize)
	t.Run("FIFOMixedTags", s.fifoMixedTags)
	t.Run("AllPairs", s.allPairs)
	t.Run("Empty", s.empty)
	t.Run("NoRetain", s.noRetain)
	t.Run("Mismatch", s.mismatch)
	t.Run("RecvBytesMax", s.recvBytesMax)
	t.Run("Large", s.large)
	t.Run("CancelRecv", s.cancelRecv)
	t.Run("CancelSend", s.cancelSend)
	t.Run("CloseUnblocksPeers", func(t *testing.T) {
		if o.CloseKeepsPeers != "" {
			t.Skip(o.CloseKeepsPeers)
		}
		s.closeUnblocksPeers(t)
	})
	t.Run("Stats", s.stats)
	t.Run("SelfPanics", s.selfPanics)
}

type suite struct {
	newGroup NewGroup
	o        Options
}

// group makes a group of size ranks, checks its shape and closes it when
// the test ends.
func (s *suite) group(t *testing.T, size int) []transport.Endpoint {
	t.Helper()
	eps := s.newGroup(t, size)
	if len(eps) != size {
		t.Fatalf("newGroup(%d) returned %d endpoints", size, len(eps))
	}
	t.Cleanup(func() {
		for _, ep := range eps {
			ep.Close()
		}
	})
	return eps
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// values returns n floats determined by (key, n), all exactly
// representable in half precision: multiples of 1/4 of magnitude at most
// 255.75.
func values(key, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((key*7919+i*31)%2047-1023) * 0.25
	}
	return v
}

func byteValues(key, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(key*13 + i*7)
	}
	return b
}

func equalFloats(a, b []float32) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if a[i] != b[i] {
			return i, false
		}
	}
	return 0, true
}

// tasks runs functions concurrently and reports every error they return;
// it fails the test if they are not all done within bound.
type tasks struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (ts *tasks) Go(name string, f func() error) {
	ts.wg.Go(func() {
		if err := f(); err != nil {
			ts.mu.Lock()
			ts.errs = append(ts.errs, fmt.Errorf("%s: %w", name, err))
			ts.mu.Unlock()
		}
	})
}

func (ts *tasks) Wait(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() { ts.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("transport hung: tasks not done after %v", bound)
	}
	for _, err := range ts.errs {
		t.Error(err)
	}
}

// peerError checks that err is a *transport.PeerError naming rank, and
// that its message contains each of the given fragments.
func peerError(t *testing.T, what string, err error, rank int, fragments ...string) {
	t.Helper()
	var pe *transport.PeerError
	if !errors.As(err, &pe) {
		t.Errorf("%s: got %v (%T), want a *transport.PeerError naming rank %d", what, err, err, rank)
		return
	}
	if pe.Rank != rank {
		t.Errorf("%s: PeerError names rank %d, want %d: %v", what, pe.Rank, rank, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("%s: error %q does not mention %q", what, err, f)
		}
	}
}

// returnsWithin runs f and fails the test if it has not returned within d.
func returnsWithin(t *testing.T, what string, d time.Duration, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

func (s *suite) rankSize(t *testing.T) {
	for _, size := range []int{1, 2, 4} {
		eps := s.group(t, size)
		for r, ep := range eps {
			if ep.Rank() != r || ep.Size() != size {
				t.Errorf("endpoint %d of %d says rank %d, size %d", r, size, ep.Rank(), ep.Size())
			}
		}
	}
}

// fifoMixedTags sends, from ranks 1 and 2 to rank 0 and from rank 0 to
// rank 1 at the same time, sequences of float and byte messages with
// changing tags and lengths; each must arrive in order and intact.
func (s *suite) fifoMixedTags(t *testing.T) {
	eps := s.group(t, 3)
	ctx := ctxFor(t)
	const msgs = 40
	length := func(i int) int { return (i * 37) % 300 }
	tag := func(from, i int) uint32 { return uint32(from*1000 + i%7) }
	send := func(from, to int) func() error {
		return func() error {
			for i := range msgs {
				var err error
				if i%3 == 2 {
					err = eps[from].SendBytes(ctx, to, tag(from, i), byteValues(from*100+i, length(i)))
				} else {
					err = eps[from].Send(ctx, to, tag(from, i), values(from*100+i, length(i)))
				}
				if err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
			}
			return nil
		}
	}
	recv := func(to, from int) func() error {
		return func() error {
			for i := range msgs {
				if i%3 == 2 {
					b, err := eps[to].RecvBytes(ctx, from, tag(from, i), 1000)
					if err != nil {
						return fmt.Errorf("message %d: %w", i, err)
					}
					if want := byteValues(from*100+i, length(i)); string(b) != string(want) {
						return fmt.Errorf("message %d: bytes differ", i)
					}
					continue
				}
				buf := make([]float32, length(i))
				if err := eps[to].Recv(ctx, from, tag(from, i), buf); err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
				if j, ok := equalFloats(buf, values(from*100+i, length(i))); !ok {
					return fmt.Errorf("message %d: value %d is %g", i, j, buf[j])
				}
			}
			return nil
		}
	}
	var ts tasks
	ts.Go("1->0 send", send(1, 0))
	ts.Go("2->0 send", send(2, 0))
	ts.Go("0->1 send", send(0, 1))
	ts.Go("1->0 recv", recv(0, 1))
	ts.Go("2->0 recv", recv(0, 2))
	ts.Go("0->1 recv", recv(1, 0))
	ts.Wait(t)
}

// allPairs has every ordered pair of a 5-rank group exchange messages at
// once, one sending and one receiving goroutine per pair.
func (s *suite) allPairs(t *testing.T) {
	const size, msgs = 5, 6
	eps := s.group(t, size)
	ctx := ctxFor(t)
	key := func(from, to, i int) int { return (from*size+to)*msgs + i }
	n := func(from, to, i int) int { return 1 + (from*131+to*17+i*1031)%5000 }
	var ts tasks
	for from := range size {
		for to := range size {
			if from == to {
				continue
			}
			ts.Go(fmt.Sprintf("%d->%d send", from, to), func() error {
				for i := range msgs {
					if err := eps[from].Send(ctx, to, uint32(i), values(key(from, to, i), n(from, to, i))); err != nil {
						return err
					}
				}
				return nil
			})
			ts.Go(fmt.Sprintf("%d->%d recv", from, to), func() error {
				for i := range msgs {
					buf := make([]float32, n(from, to, i))
					if err := eps[to].Recv(ctx, from, uint32(i), buf); err != nil {
						return err
					}
					if j, ok := equalFloats(buf, values(key(from, to, i), len(buf))); !ok {
						return fmt.Errorf("message %d: value %d is %g", i, j, buf[j])
					}
				}
				return nil
			})
		}
	}
	ts.Wait(t)
}

func (s *suite) empty(t *testing.T) {
	eps := s.group(t, 2)
	ctx := ctxFor(t)
	var ts tasks
	ts.Go("send", func() error {
		if err := eps[0].Send(ctx, 1, 1, nil); err != nil {
			return err
		}
		return eps[0].SendBytes(ctx, 1, 2, []byte{})
	})
	ts.Go("recv", func() error {
		if err := eps[1].Recv(ctx, 0, 1, []float32{}); err != nil {
			return err
		}
		b, err := eps[1].RecvBytes(ctx, 0, 2, 0)
		if err == nil && len(b) != 0 {
			err = fmt.Errorf("empty byte message arrived as %d bytes", len(b))
		}
		return err
	})
	ts.Wait(t)
}

// noRetain sends twice from one buffer, changing it in between: the first
// message must carry the first contents.
func (s *suite) noRetain(t *testing.T) {
	eps := s.group(t, 2)
	ctx := ctxFor(t)
	const n = 1000
	var ts tasks
	ts.Go("send", func() error {
		buf := values(1, n)
		fb := byteValues(1, n)
		if err := eps[0].Send(ctx, 1, 0, buf); err != nil {
			return err
		}
		if err := eps[0].SendBytes(ctx, 1, 0, fb); err != nil {
			return err
		}
		copy(buf, values(2, n))
		copy(fb, byteValues(2, n))
		if err := eps[0].Send(ctx, 1, 0, buf); err != nil {
			return err
		}
		return eps[0].SendBytes(ctx, 1, 0, fb)
	})
	ts.Go("recv", func() error {
		for _, key := range []int{1, 2} {
			buf := make([]float32, n)
			if err := eps[1].Recv(ctx, 0, 0, buf); err != nil {
				return err
			}
			if _, ok := equalFloats(buf, values(key, n)); !ok {
				return fmt.Errorf("floats message %d does not hold what was sent", key)
			}
			b, err := eps[1].RecvBytes(ctx, 0, 0, n)
			if err != nil {
				return err
			}
			if string(b) != string(byteValues(key, n)) {
				return fmt.Errorf("byte message %d does not hold what was sent", key)
			}
		}
		return nil
	})
	ts.Wait(t)
}

// mismatch checks that a message other than the one Recv asks for gives a
// PeerError naming the sender, in a fresh group each time.
func (s *suite) mismatch(t *testing.T) {
	sendFloats := func(tag uint32, n int) func(context.Context, transport.Endpoint) error {
		return func(ctx context.Context, ep transport.Endpoint) error { return ep.Send(ctx, 0, tag, values(0, n)) }
	}
	sendBytes := func(tag uint32, n int) func(context.Context, transport.Endpoint) error {
		return func(ctx context.Context, ep transport.Endpoint) error {
			return ep.SendBytes(ctx, 0, tag, byteValues(0, n))
		}
	}
	recvFloats := func(tag uint32, n int) func(context.Context, transport.Endpoint) error {
		return func(ctx context.Context, ep transport.Endpoint) error {
			return ep.Recv(ctx, 1, tag, make([]float32, n))
		}
	}
	recvBytes := func(tag uint32, max int) func(context.Context, transport.Endpoint) error {
		return func(ctx context.Context, ep transport.Endpoint) error {
			_, err := ep.RecvBytes(ctx, 1, tag, max)
			return err
		}
	}
	tests := []struct {
		name string
		send func(context.Context, transport.Endpoint) error
		recv func(context.Context, transport.Endpoint) error
	}{
		{"Tag", sendFloats(5, 10), recvFloats(6, 10)},
		{"ShortLength", sendFloats(5, 10), recvFloats(5, 11)},
		{"LongLength", sendFloats(5, 10), recvFloats(5, 9)},
		{"BytesForFloats", sendBytes(5, 40), recvFloats(5, 10)},
		{"FloatsForBytes", sendFloats(5, 10), recvBytes(5, 1000)},
		{"BytesTag", sendBytes(5, 4), recvBytes(6, 1000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eps := s.group(t, 2)
			ctx := ctxFor(t)
			sendCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var ts tasks
			// The sender may fail (the receiver refused) or succeed (the
			// message was buffered); either way it must return.
			ts.Go("send", func() error { tc.send(sendCtx, eps[1]); return nil })
			err := returnsWithin(t, "Recv", bound, func() error { return tc.recv(ctx, eps[0]) })
			peerError(t, "mismatched Recv", err, 1)
			ts.Wait(t)
		})
	}
}

func (s *suite) recvBytesMax(t *testing.T) {
	eps := s.group(t, 2)
	ctx := ctxFor(t)
	sendCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var ts tasks
	ts.Go("send", func() error {
		if err := eps[1].SendBytes(sendCtx, 0, 3, byteValues(3, 100)); err != nil {
			return err
		}
		eps[1].SendBytes(sendCtx, 0, 3, byteValues(4, 101)) // refused
		return nil
	})
	b, err := eps[0].RecvBytes(ctx, 1, 3, 100)
	if err != nil || string(b) != string(byteValues(3, 100)) {
		t.Fatalf("RecvBytes at exactly max: %d bytes, %v", len(b), err)
	}
	err = returnsWithin(t, "RecvBytes over max", bound, func() error {
		_, err := eps[0].RecvBytes(ctx, 1, 3, 100)
		return err
	})
	peerError(t, "RecvBytes over max", err, 1, "101", "100")
	ts.Wait(t)
}

// large sends a large message each way at the same time.
func (s *suite) large(t *testing.T) {
	eps := s.group(t, 2)
	ctx := ctxFor(t)
	n := s.o.LargeBytes / 4
	var ts tasks
	for from := range 2 {
		to := 1 - from
		ts.Go(fmt.Sprintf("%d->%d", from, to), func() error {
			return eps[from].Send(ctx, to, 9, values(from, n))
		})
		ts.Go(fmt.Sprintf("%d<-%d", to, from), func() error {
			buf := make([]float32, n)
			if err := eps[to].Recv(ctx, from, 9, buf); err != nil {
				return err
			}
			if j, ok := equalFloats(buf, values(from, n)); !ok {
				return fmt.Errorf("value %d of %d is %g", j, n, buf[j])
			}
			return nil
		})
	}
	ts.Wait(t)
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (s *suite) cancelRecv(t *testing.T) {
	eps := s.group(t, 2)
	// Already cancelled: no wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := returnsWithin(t, "Recv with a cancelled ctx", bound, func() error { return eps[0].Recv(ctx, 1, 0, make([]float32, 4)) })
	if !isCtxErr(err) {
		t.Errorf("Recv with a cancelled ctx: %v, want the context's error", err)
	}
	// Cancelled while blocked.
	for _, bytes := range []bool{false, true} {
		// start is read before the deadline is set: read after, a pause
		// between the two would make the Recv look early.
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := returnsWithin(t, "blocked Recv", bound, func() error {
			if bytes {
				_, err := eps[1].RecvBytes(ctx, 0, 0, 10)
				return err
			}
			return eps[1].Recv(ctx, 0, 0, make([]float32, 4))
		})
		cancel()
		if !isCtxErr(err) {
			t.Errorf("blocked Recv (bytes %v) after its ctx expired: %v, want the context's error", bytes, err)
		}
		if d := time.Since(start); d < 40*time.Millisecond {
			t.Errorf("blocked Recv returned after %v, before its ctx expired", d)
		}
	}
}

// cancelSend cancels a Send of a large message that nobody receives: it
// must return, with the context's error unless the transport took the
// whole message.
func (s *suite) cancelSend(t *testing.T) {
	eps := s.group(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	err := returnsWithin(t, "blocked Send", bound, func() error {
		return eps[0].Send(ctx, 1, 0, make([]float32, s.o.LargeBytes/4))
	})
	if err != nil && !isCtxErr(err) {
		t.Errorf("cancelled Send: %v, want nil or the context's error", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	err = returnsWithin(t, "Send with a cancelled ctx", bound, func() error {
		return eps[1].Send(ctx, 0, 0, make([]float32, s.o.LargeBytes/4))
	})
	if err != nil && !isCtxErr(err) {
		t.Errorf("Send with a cancelled ctx: %v, want nil or the context's error", err)
	}
}

// closeUnblocksPeers closes rank 1 while ranks 0 and 2 wait to receive
// from it: both get a PeerError naming rank 1. Rank 1's own calls then
// fail without hanging, and a second Close is harmless.
func (s *suite) closeUnblocksPeers(t *testing.T) {
	eps := s.group(t, 3)
	ctx := ctxFor(t)
	errs := make(chan error, 3)
	var started sync.WaitGroup
	started.Add(3)
	for _, r := range []int{0, 2} {
		go func() {
			started.Done()
			errs <- eps[r].Recv(ctx, 1, 0, make([]float32, 8))
		}()
	}
	go func() {
		started.Done()
		_, err := eps[0].RecvBytes(ctx, 2, 0, 8) // unrelated pair: stays blocked
		errs <- err
	}()
	started.Wait()
	time.Sleep(20 * time.Millisecond) // let the Recvs block
	if err := eps[1].Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for range 2 {
		select {
		case err := <-errs:
			peerError(t, "Recv from a closed peer", err, 1)
		case <-time.After(bound):
			t.Fatalf("Recv from a closed peer still blocked after %v", bound)
		}
	}
	if err := returnsWithin(t, "Recv on a closed endpoint", bound, func() error { return eps[1].Recv(ctx, 0, 0, make([]float32, 1)) }); err == nil {
		t.Errorf("Recv on a closed endpoint succeeded")
	}
	if err := returnsWithin(t, "Send on a closed endpoint", bound, func() error { return eps[1].Send(ctx, 2, 0, make([]float32, 1)) }); err == nil {
		t.Errorf("Send on a closed endpoint succeeded")
	}
	eps[1].Close()
	// Ranks 0 and 2 still talk to each other.
	var ts tasks
	ts.Go("send", func() error { return eps[2].SendBytes(ctx, 0, 0, []byte("ok")) })
	ts.Go("recv", func() error {
		err := <-errs
		if err != nil {
			return fmt.Errorf("rank 0 from rank 2 after rank 1 closed: %w", err)
		}
		return nil
	})
	ts.Wait(t)
}

func (s *suite) stats(t *testing.T) {
	eps := s.group(t, 3)
	ctx := ctxFor(t)
	var ts tasks
	ts.Go("0 send", func() error {
		if err := eps[0].Send(ctx, 1, 0, values(0, 100)); err != nil {
			return err
		}
		return eps[0].SendBytes(ctx, 2, 0, byteValues(0, 7))
	})
	ts.Go("1", func() error {
		if err := eps[1].Recv(ctx, 0, 0, make([]float32, 100)); err != nil {
			return err
		}
		return eps[1].Send(ctx, 2, 0, values(1, 10))
	})
	ts.Go("2", func() error {
		if _, err := eps[2].RecvBytes(ctx, 0, 0, 7); err != nil {
			return err
		}
		return eps[2].Recv(ctx, 1, 0, make([]float32, 10))
	})
	ts.Wait(t)
	fb := int64(s.o.FloatBytes)
	want := []transport.Stats{
		{BytesSent: 100*fb + 7, MsgsSent: 2},
		{BytesSent: 10 * fb, BytesRecv: 100 * fb, MsgsSent: 1, MsgsRecv: 1},
		{BytesRecv: 7 + 10*fb, MsgsRecv: 2},
	}
	for r, w := range want {
		if got := eps[r].Stats(); got != w {
			t.Errorf("rank %d: Stats %+v, want %+v", r, got, w)
		}
	}
}

func (s *suite) selfPanics(t *testing.T) {
	eps := s.group(t, 2)
	ctx := ctxFor(t)
	ep := eps[1]
	for _, peer := range []int{1, -1, 2} {
		for name, call := range map[string]func(){
			"Send":      func() { ep.Send(ctx, peer, 0, make([]float32, 1)) },
			"Recv":      func() { ep.Recv(ctx, peer, 0, make([]float32, 1)) },
			"SendBytes": func() { ep.SendBytes(ctx, peer, 0, []byte{1}) },
			"RecvBytes": func() { ep.RecvBytes(ctx, peer, 0, 1) },
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s with peer %d on rank 1 of 2 did not panic", name, peer)
					}
				}()
				call()
			}()
		}
	}
}
