package ps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/comm/rpc"
	"dsgd/comm/wire"
	"dsgd/protocol/center"
)

const token = "tok"

func weights(n int, seed float32) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(i%13)*0.25 - seed
	}
	return w
}

// sgd is a weed-out update rule; it works element by element, so a
// sharded center applies it the same as a whole one.
func sgd(w, g []float32, iter int) {
	for i := range w {
		w[i] -= 0.5 * g[i]
	}
}

func newLocal(t testing.TB, workers int, w0 []float32) *center.Local {
	t.Helper()
	l, err := center.NewLocal(center.Config{Workers: workers, Weights: w0, Update: sgd})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type logged struct {
	mu   sync.Mutex
	errs []string
}

func (l *logged) log(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err.Error())
	l.mu.Unlock()
}

func (l *logged) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

// serve starts a parameter server for c and stops it at the test's end.
func serve(t testing.TB, c center.Center, cfg ServerConfig) (*Server, *logged) {
	t.Helper()
	log := &logged{}
	cfg.Token = token
	cfg.ErrorLog = log.log
	srv, err := Listen("", c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, log
}

func dial(t testing.TB, addr string, cfg ClientConfig) *Client {
	t.Helper()
	cfg.Token = token
	c, err := Dial(context.Background(), addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// script runs every operation of a one-worker center and records what
// each returned, so two centers can be compared.
func script(t *testing.T, c center.Center, n int) []string {
	t.Helper()
	ctx := context.Background()
	var trace []string
	rec := func(format string, args ...any) { trace = append(trace, fmt.Sprintf(format, args...)) }
	buf := make([]float32, n)
	iter, err := c.Join(ctx, 0)
	rec("join %d %v", iter, err)
	rec("pull %v %v", c.Pull(ctx, 0, buf), buf)
	delta := weights(n, 1)
	rec("push %v", c.Push(ctx, 0, delta))
	x := weights(n, -2)
	rec("elastic %v %v", c.Elastic(ctx, 0, x, 0.25), x)
	for r := range 2 {
		next, dropped, err := c.Round(ctx, 0, r, weights(n, float32(r)))
		rec("round %d %v %v", next, dropped, err)
	}
	_, _, err = c.Round(ctx, 0, 7, delta)
	rec("bad round fails %v", err != nil)
	next, err := c.Closed(ctx, 0, 1) // round 1 closed: answered at once
	rec("closed %d %v", next, err)
	stop, err := c.Clock(ctx, 0, 5, 2)
	rec("clock %v %v", stop, err)
	rec("pull %v %v", c.Pull(ctx, 0, buf), buf)
	rec("bad worker fails %v", c.Push(ctx, 3, delta) != nil)
	rec("leave %v", c.Leave(ctx, 0, errors.New("done")))
	return trace
}

func compareTraces(t *testing.T, want, got []string) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("traces of %d and %d steps", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("step %d:\nwant %s\ngot  %s", i, want[i], got[i])
		}
	}
}

func TestClientMatchesLocal(t *testing.T) {
	const n = 37
	want := script(t, newLocal(t, 1, weights(n, 0)), n)
	srv, _ := serve(t, newLocal(t, 1, weights(n, 0)), ServerConfig{})
	cl := dial(t, srv.Addr(), ClientConfig{})
	if cl.N() != n {
		t.Fatalf("client sees %d parameters, want %d", cl.N(), n)
	}
	compareTraces(t, want, script(t, cl, n))
}

func TestShardedMatchesSingle(t *testing.T) {
	const n = 101
	w0 := weights(n, 0)
	want := script(t, newLocal(t, 1, w0), n)

	bounds := EvenBounds(n, 3)
	var addrs []string
	var locals []center.Center
	for i := range 3 {
		part := w0[bounds[i]:bounds[i+1]]
		srv, _ := serve(t, newLocal(t, 1, part), ServerConfig{})
		addrs = append(addrs, srv.Addr())
		locals = append(locals, newLocal(t, 1, part))
	}
	sh, err := DialSharded(context.Background(), addrs, ClientConfig{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	if !slices.Equal(sh.Bounds(), bounds) || sh.N() != n {
		t.Fatalf("sharded bounds %v, want %v", sh.Bounds(), bounds)
	}
	compareTraces(t, want, script(t, sh, n))

	// The same over in-process shards.
	direct, err := NewSharded(locals, bounds)
	if err != nil {
		t.Fatal(err)
	}
	compareTraces(t, want, script(t, direct, n))
}

func TestEvenBoundsAndNewSharded(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		want []int
	}{{10, 3, []int{0, 3, 6, 10}}, {4, 4, []int{0, 1, 2, 3, 4}}, {7, 1, []int{0, 7}}} {
		if got := EvenBounds(tc.n, tc.k); !slices.Equal(got, tc.want) {
			t.Errorf("EvenBounds(%d, %d) = %v, want %v", tc.n, tc.k, got, tc.want)
		}
	}
	l := newLocal(t, 1, weights(4, 0))
	for _, b := range [][]int{{0, 4}, {0, 2, 2}, {1, 2, 4}, {0, 3, 2}} {
		if _, err := NewSharded([]center.Center{l, l}, b); err == nil {
			t.Errorf("NewSharded with bounds %v succeeded", b)
		}
	}
}

// pushAll has each of workers push rounds of integer-valued deltas (exact
// in float32 whatever the order) and pull in between, concurrently.
func pushAll(t *testing.T, cs []center.Center, n, rounds int) {
	var wg sync.WaitGroup
	for w, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			buf := make([]float32, n)
			delta := make([]float32, n)
			for r := range rounds {
				for i := range delta {
					delta[i] = float32((w+1)*(i%5) - r)
				}
				if err := c.Push(ctx, w, delta); err != nil {
					t.Error(err)
					return
				}
				if err := c.Pull(ctx, w, buf); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func expectedCenter(t *testing.T, workers, n, rounds int) []float32 {
	direct := newLocal(t, workers, weights(n, 0))
	cs := make([]center.Center, workers)
	for i := range cs {
		cs[i] = direct
	}
	pushAll(t, cs, n, rounds)
	return direct.Weights()
}

func TestConcurrentClients(t *testing.T) {
	const workers, n, rounds = 4, 3000, 25
	want := expectedCenter(t, workers, n, rounds)
	remote := newLocal(t, workers, weights(n, 0))
	srv, _ := serve(t, remote, ServerConfig{})
	cs := make([]center.Center, workers)
	for i := range cs {
		cs[i] = dial(t, srv.Addr(), ClientConfig{})
	}
	pushAll(t, cs, n, rounds)
	if !slices.Equal(remote.Weights(), want) {
		t.Fatal("the served center differs from the local one after the same pushes")
	}
}

// rawPush opens a connection, says hello, and sends the first part of a
// push frame, as a worker killed in the middle of a push would.
func rawPush(t *testing.T, addr string, n, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := wire.Hello{Version: rpc.Version, Token: token}.AppendBinary(nil)
	frame := wire.AppendHeader(nil, wire.Header{Kind: wire.KindControl, Len: uint64(len(hello))})
	if _, err := c.Write(append(frame, hello...)); err != nil {
		t.Fatal(err)
	}
	var hdr [wire.HeaderSize]byte
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(hdr[:]); err != nil {
		t.Fatal(err)
	}
	// A request frame: header, 56-byte fixed part (status 0, worker 0),
	// then only part of the payload.
	body := make([]byte, 56+4*n)
	for i := 56; i < len(body); i++ {
		body[i] = 0x3f // big values: a visible change if it got applied
	}
	frame = wire.AppendHeader(nil, wire.Header{Kind: wire.KindBytes, Tag: opPush, Len: uint64(len(body)), Seq: 1})
	if _, err := c.Write(append(frame, body[:sent]...)); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientKilledMidPush(t *testing.T) {
	const workers, n, rounds = 3, 20000, 10
	want := expectedCenter(t, workers, n, rounds)
	remote := newLocal(t, workers, weights(n, 0))
	srv, log := serve(t, remote, ServerConfig{Timeout: 2 * time.Second})
	cs := make([]center.Center, workers)
	for i := range cs {
		cs[i] = dial(t, srv.Addr(), ClientConfig{})
	}
	killed := rawPush(t, srv.Addr(), n, 4000)
	local := killed.LocalAddr().String()
	done := make(chan struct{})
	go func() {
		pushAll(t, cs, n, rounds)
		close(done)
	}()
	killed.Close()
	<-done
	if !slices.Equal(remote.Weights(), want) {
		t.Fatal("a client killed mid-push disturbed the center")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		errs := log.all()
		if len(errs) == 1 && strings.Contains(errs[0], local) && (strings.Contains(errs[0], "unexpected EOF") || strings.Contains(errs[0], "reset by peer")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server logged %q; want one error naming %s", errs, local)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A new client is served.
	buf := make([]float32, n)
	if err := dial(t, srv.Addr(), ClientConfig{}).Pull(context.Background(), 0, buf); err != nil || !slices.Equal(buf, want) {
		t.Fatalf("pull after the kill: %v", err)
	}
}

// memStore is an in-memory BlobStore that counts its traffic.
type memStore struct {
	mu         sync.Mutex
	m          map[string][]float32
	puts, gets map[string]int
}

func newMemStore() *memStore {
	return &memStore{m: map[string][]float32{}, puts: map[string]int{}, gets: map[string]int{}}
}

func (s *memStore) PutFloats(ctx context.Context, key string, v []float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = slices.Clone(v)
	s.puts[key]++
	return nil
}

func (s *memStore) GetFloats(ctx context.Context, key string, dst []float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		return fmt.Errorf("no key %q", key)
	}
	if len(v) != len(dst) {
		return fmt.Errorf("key %q holds %d values, want %d", key, len(v), len(dst))
	}
	copy(dst, v)
	s.gets[key]++
	return nil
}

func (s *memStore) count(m map[string]int, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return m[key]
}

// countingCenter counts the pushes that reach a center, and their size.
type countingCenter struct {
	*center.Local
	mu     sync.Mutex
	pushes int
}

func (c *countingCenter) Push(ctx context.Context, w int, delta []float32) error {
	c.mu.Lock()
	c.pushes++
	c.mu.Unlock()
	return c.Local.Push(ctx, w, delta)
}

func TestBlobStore(t *testing.T) {
	const workers, n, rounds = 3, 500, 8
	want := expectedCenter(t, workers, n, rounds)
	store := newMemStore()
	remote := &countingCenter{Local: newLocal(t, workers, weights(n, 0))}
	srv, _ := serve(t, remote, ServerConfig{Store: store})
	cs := make([]center.Center, workers)
	for i := range cs {
		cs[i] = dial(t, srv.Addr(), ClientConfig{Store: store})
	}
	pushAll(t, cs, n, rounds)
	if !slices.Equal(remote.Weights(), want) {
		t.Fatal("the center differs from the local one after the same pushes through the store")
	}
	if remote.pushes != workers*rounds {
		t.Fatalf("%d pushes reached the center, want %d", remote.pushes, workers*rounds)
	}
	for w := range workers {
		k := DeltaKey(w)
		if store.count(store.puts, k) != rounds || store.count(store.gets, k) != rounds {
			t.Fatalf("key %s: %d puts, %d gets; want %d each", k, store.count(store.puts, k), store.count(store.gets, k), rounds)
		}
	}
	// The initial publication plus one per push; every pull read the store.
	if p, g := store.count(store.puts, WeightsKey), store.count(store.gets, WeightsKey); p != 1+workers*rounds || g != workers*rounds {
		t.Fatalf("%s: %d puts, %d gets", WeightsKey, p, g)
	}
	cl := cs[0].(*Client)
	buf := make([]float32, n)
	ctx := context.Background()
	if err := cl.Pull(ctx, 0, buf); err != nil || !slices.Equal(buf, want) || cl.Version() != 1+workers*rounds {
		t.Fatalf("pull: %v, version %d", err, cl.Version())
	}
	// An elastic exchange travels through the store both ways and
	// changes the center as the local one; the next pull republishes it.
	x := weights(n, 3)
	lx, local := slices.Clone(x), newLocal(t, workers, slices.Clone(remote.Weights()))
	if err := cl.Elastic(ctx, 0, x, 0.5); err != nil {
		t.Fatal(err)
	}
	if err := local.Elastic(ctx, 0, lx, 0.5); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(x, lx) || !slices.Equal(remote.Weights(), local.Weights()) {
		t.Fatal("the exchange through the store differs from the local one")
	}
	if k := ExchangeKey(0); store.count(store.puts, k) != 2 || store.count(store.gets, k) != 2 {
		t.Fatalf("key %s: %d puts, %d gets; want 2 each (there and back)", k, store.count(store.puts, k), store.count(store.gets, k))
	}
	if err := cl.Pull(ctx, 0, buf); err != nil || !slices.Equal(buf, remote.Weights()) || cl.Version() != 2+workers*rounds {
		t.Fatalf("pull after elastic: %v, version %d", err, cl.Version())
	}
}

// TestBlobStoreRounds: weed-out's gradients travel through the store, and
// the rounds close as the local center's do.
func TestBlobStoreRounds(t *testing.T) {
	const workers, n = 2, 64
	store := newMemStore()
	remote := newLocal(t, workers, weights(n, 0))
	local := newLocal(t, workers, weights(n, 0))
	srv, _ := serve(t, remote, ServerConfig{Store: store})
	ctx := context.Background()
	// One client per worker: a round waits for the others.
	clients := []center.Center{dial(t, srv.Addr(), ClientConfig{Store: store}), dial(t, srv.Addr(), ClientConfig{Store: store})}
	for _, cs := range [][]center.Center{clients, {local, local}} {
		for r := range 2 {
			done := make(chan error, workers)
			for w := range workers {
				go func() {
					next, dropped, err := cs[w].Round(ctx, w, r, weights(n, float32(w+r+1)))
					if err == nil && (next != r+1 || dropped) {
						err = fmt.Errorf("round %d: next %d dropped %v", r, next, dropped)
					}
					done <- err
				}()
			}
			for range workers {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if !slices.Equal(remote.Weights(), local.Weights()) {
		t.Fatal("the rounds through the store moved the center differently")
	}
	for w := range workers {
		if k := GradsKey(w); store.count(store.puts, k) != 2 || store.count(store.gets, k) != 2 {
			t.Fatalf("key %s: %d puts, %d gets; want 2 each", k, store.count(store.puts, k), store.count(store.gets, k))
		}
	}
}

func TestDialErrors(t *testing.T) {
	srv, _ := serve(t, newLocal(t, 1, weights(5, 0)), ServerConfig{})
	ctx := context.Background()
	if _, err := Dial(ctx, srv.Addr(), ClientConfig{Token: "nope"}); !errors.Is(err, rpc.ErrRefused) || !strings.HasPrefix(err.Error(), "ps: ") {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := Dial(ctx, srv.Addr(), ClientConfig{Token: token, Store: newMemStore()}); err == nil || !strings.Contains(err.Error(), "blob store") {
		t.Errorf("store on one side only: %v", err)
	}
	if _, err := Listen("", struct{ center.Center }{}, ServerConfig{}); err == nil || !strings.Contains(err.Error(), "ServerConfig.N") {
		t.Errorf("center of unknown size: %v", err)
	}
	if _, err := Listen("", newLocal(t, 1, weights(5000, 0)), ServerConfig{MaxFrame: 1000}); err == nil {
		t.Error("a max frame too small for the parameters was accepted")
	}
}

func TestLengthMismatch(t *testing.T) {
	srv, _ := serve(t, newLocal(t, 1, weights(5, 0)), ServerConfig{})
	cl := dial(t, srv.Addr(), ClientConfig{})
	ctx := context.Background()
	for name, err := range map[string]error{
		"pull":    cl.Pull(ctx, 0, make([]float32, 4)),
		"push":    cl.Push(ctx, 0, make([]float32, 6)),
		"elastic": cl.Elastic(ctx, 0, make([]float32, 0), 0.5),
	} {
		if err == nil || !strings.Contains(err.Error(), "holds 5") {
			t.Errorf("%s of the wrong length: %v", name, err)
		}
	}
	// A server-side error (bad worker id) comes back naming the server
	// and leaves the client usable.
	err := cl.Push(ctx, 9, make([]float32, 5))
	if err == nil || !strings.Contains(err.Error(), srv.Addr()) || !strings.Contains(err.Error(), "worker 9") {
		t.Errorf("push by worker 9: %v", err)
	}
	if err := cl.Pull(ctx, 0, make([]float32, 5)); err != nil {
		t.Fatal(err)
	}
}

func TestSSPWaitOverRPC(t *testing.T) {
	// Worker 1 ahead by more than s waits in Clock until worker 0 moves,
	// longer than the rpc timeout: the keep-alives hold the call open.
	const timeout = 300 * time.Millisecond
	srv, _ := serve(t, newLocal(t, 2, weights(5, 0)), ServerConfig{Timeout: timeout})
	c0 := dial(t, srv.Addr(), ClientConfig{Timeout: timeout})
	c1 := dial(t, srv.Addr(), ClientConfig{Timeout: timeout})
	ctx := context.Background()
	for w, c := range []*Client{c0, c1} {
		if _, err := c.Join(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := c1.Clock(ctx, 1, 3, 1)
		done <- err
	}()
	time.Sleep(4 * timeout)
	select {
	case err := <-done:
		t.Fatalf("worker 1 did not wait for worker 0: %v", err)
	default:
	}
	if _, err := c0.Clock(ctx, 0, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || time.Since(start) < 4*timeout {
		t.Fatalf("clock: %v", err)
	}
}

func TestPullAllocs(t *testing.T) {
	const n = 10000
	srv, _ := serve(t, newLocal(t, 1, weights(n, 0)), ServerConfig{})
	cl := dial(t, srv.Addr(), ClientConfig{})
	buf := make([]float32, n)
	ctx := context.Background()
	pull := func() {
		if err := cl.Pull(ctx, 0, buf); err != nil {
			t.Fatal(err)
		}
	}
	pull()
	if a := testing.AllocsPerRun(50, pull); a > 0 {
		t.Errorf("%v allocations per pull", a)
	}
	push := func() {
		if err := cl.Push(ctx, 0, buf); err != nil {
			t.Fatal(err)
		}
	}
	push()
	if a := testing.AllocsPerRun(50, push); a > 0 {
		t.Errorf("%v allocations per push", a)
	}
}

func TestShardedBlobStore(t *testing.T) {
	const workers, n, rounds = 2, 301, 5
	want := expectedCenter(t, workers, n, rounds)
	store := newMemStore()
	bounds := EvenBounds(n, 2)
	w0 := weights(n, 0)
	var addrs []string
	for i := range 2 {
		srv, _ := serve(t, newLocal(t, workers, w0[bounds[i]:bounds[i+1]]), ServerConfig{Store: store, KeySuffix: fmt.Sprint(":", i)})
		addrs = append(addrs, srv.Addr())
	}
	cs := make([]center.Center, workers)
	for i := range cs {
		sh, err := DialSharded(context.Background(), addrs, ClientConfig{Token: token, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close()
		cs[i] = sh
	}
	pushAll(t, cs, n, rounds)
	got := make([]float32, n)
	if err := cs[0].Pull(context.Background(), 0, got); err != nil || !slices.Equal(got, want) {
		t.Fatalf("sharded center through the store differs: %v", err)
	}
	if store.count(store.puts, WeightsKey+":1") != 1+workers*rounds || store.count(store.puts, DeltaKey(1)+":0") != rounds {
		t.Fatalf("store traffic %v", store.puts)
	}
}

// TestClosedWaitsBesideRound: a worker's Closed waits on a connection of
// its own, so its Round, which closes the round, is not held up behind
// it (weedout watches its round while it computes).
func TestClosedWaitsBesideRound(t *testing.T) {
	l := newLocal(t, 2, weights(8, 0))
	srv, _ := serve(t, l, ServerConfig{})
	c0, c1 := dial(t, srv.Addr(), ClientConfig{}), dial(t, srv.Addr(), ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for w, c := range []*Client{c0, c1} {
		if _, err := c.Join(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan int, 1)
	go func() {
		next, err := c0.Closed(ctx, 0, 0)
		if err != nil {
			t.Error(err)
		}
		closed <- next
	}()
	time.Sleep(20 * time.Millisecond) // the watch is waiting
	rounds := make(chan error, 2)
	for w, c := range []*Client{c0, c1} {
		go func() {
			_, _, err := c.Round(ctx, w, 0, weights(l.N(), 1))
			rounds <- err
		}()
	}
	for range 2 {
		if err := <-rounds; err != nil {
			t.Fatal(err)
		}
	}
	if next := <-closed; next != 1 {
		t.Fatalf("Closed answered round %d, want 1", next)
	}
}
