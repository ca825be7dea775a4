package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"dsgd/engine/tensor"
)

// dialTest connects a client to s and closes it when the test ends.
func dialTest(tb testing.TB, s *redisServer, cfg Config) *Client {
	tb.Helper()
	c, err := Dial(context.Background(), s.url(), cfg)
	if err != nil {
		tb.Fatalf("Dial(%s): %v", s.url(), err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// randomFloats returns n floats from a seeded source, with the special
// values a byte-exact store must keep.
func randomFloats(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.SmallestNonzeroFloat32, math.MaxFloat32}
	copy(v, special[:min(n, len(special))])
	return v
}

// sameBits reports the first index where a and b differ bit for bit.
func sameBits(a, b []float32) (int, bool) {
	i := tensor.FirstDiff(a, b)
	return i, i == len(a)
}

func TestStoreRoundTrip(t *testing.T) {
	srv := startRedis(t)
	st := NewStore(dialTest(t, srv, Config{}))
	ctx := context.Background()
	for _, n := range []int{0, 1, 7, 16 << 10, 4 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			key := fmt.Sprintf("w/%d", n)
			want := randomFloats(n, uint64(n))
			if err := st.PutFloats(ctx, key, want); err != nil {
				t.Fatalf("PutFloats: %v", err)
			}
			got := make([]float32, n)
			for i := range got {
				got[i] = 42
			}
			if err := st.GetFloats(ctx, key, got); err != nil {
				t.Fatalf("GetFloats: %v", err)
			}
			if i, ok := sameBits(got, want); !ok {
				t.Fatalf("float %d: got %v, want %v", i, got[i], want[i])
			}
		})
	}
}

// TestStoreLittleEndian checks the stored bytes are little-endian
// float32s, whatever the path that wrote them, and that the portable
// (big-endian host) paths agree with the native ones.
func TestStoreLittleEndian(t *testing.T) {
	srv := startRedis(t)
	c := dialTest(t, srv, Config{PoolSize: 1})
	st := NewStore(c)
	ctx := context.Background()
	v := randomFloats(50000, 3) // more than one scratch buffer
	if err := st.PutFloats(ctx, "le", v); err != nil {
		t.Fatal(err)
	}
	b, err := c.Get(ctx, "le")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4*len(v) {
		t.Fatalf("stored %d bytes, want %d", len(b), 4*len(v))
	}
	for i, x := range v {
		bits := math.Float32bits(x)
		got := uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
		if got != bits {
			t.Fatalf("float %d stored as %#x, want little-endian %#x", i, got, bits)
		}
	}

	// The portable paths, run on a connection taken from the pool.
	cn, err := c.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = cn.setPortable(ctx, "le2", v)
	if err == nil {
		got := make([]float32, len(v))
		err = cn.getFloats(ctx, "le2", got, false)
		if i, ok := sameBits(got, v); err == nil && !ok {
			t.Errorf("portable round trip: float %d: got %v, want %v", i, got[i], v[i])
		}
	}
	c.put(cn)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := c.Get(ctx, "le2")
	if err != nil {
		t.Fatal(err)
	}
	if string(b2) != string(b) {
		t.Fatal("portable SET stored different bytes from the native one")
	}
}

// setPortable is set with the big-endian-host encoding forced.
func (cn *conn) setPortable(ctx context.Context, key string, f []float32) error {
	stop, err := cn.begin(ctx)
	if err != nil {
		return err
	}
	return cn.finish(ctx, stop, "SET", cn.setRoundTrip(key, nil, f, false))
}

func TestStoreErrors(t *testing.T) {
	srv := startRedis(t)
	c := dialTest(t, srv, Config{PoolSize: 1, MaxValue: 1 << 20})
	st := NewStore(c)
	ctx := context.Background()
	if err := st.PutFloats(ctx, "ten", make([]float32, 10)); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "odd", []byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "big", make([]byte, 2<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "LPUSH", "list", "x"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key    string
		n      int
		target error
		want   []string
	}{
		{"missing", 4, ErrNotFound, []string{`"missing"`, "not found", srv.addr}},
		{"ten", 12, ErrWrongSize, []string{`"ten"`, "40 bytes (10 float32s)", "want 12 float32s (48 bytes)"}},
		{"ten", 9, ErrWrongSize, []string{`"ten"`, "40 bytes", "want 9 float32s"}},
		{"odd", 2, ErrWrongSize, []string{`"odd"`, "6 bytes (not a whole number of float32s)"}},
		{"big", 4, ErrWrongSize, []string{`"big"`, "2097152 bytes"}}, // beyond MaxValue: connection dropped
		{"list", 1, nil, []string{"WRONGTYPE", srv.addr, "GET"}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			dst := make([]float32, tt.n)
			for i := range dst {
				dst[i] = 7
			}
			err := st.GetFloats(ctx, tt.key, dst)
			if err == nil {
				t.Fatal("GetFloats succeeded")
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("error %v does not wrap %v", err, tt.target)
			}
			var se *ServerError
			if tt.target == nil && !errors.As(err, &se) {
				t.Errorf("error %v is not a *ServerError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			for i, x := range dst {
				if x != 7 {
					t.Fatalf("dst[%d] changed to %v", i, x)
				}
			}
			// The client must still work afterwards.
			ok := make([]float32, 10)
			if err := st.GetFloats(ctx, "ten", ok); err != nil {
				t.Fatalf("GetFloats after the error: %v", err)
			}
		})
	}
}

func TestClientCommands(t *testing.T) {
	srv := startRedis(t)
	c := dialTest(t, srv, Config{PoolSize: 1})
	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := c.Set(ctx, "k", []byte("v\r\n\x00")); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "k"); err != nil || string(got) != "v\r\n\x00" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if n, err := c.Del(ctx, "k", "nope"); err != nil || n != 1 {
		t.Fatalf("Del = %d, %v; want 1", n, err)
	}
	if _, err := c.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Del: %v, want ErrNotFound", err)
	}
	v, err := c.Do(ctx, "RPUSH", "l", "a", "", strings.Repeat("x", 100<<10))
	if err != nil || v.Kind != KindInt || v.Int != 3 {
		t.Fatalf("RPUSH = %+v, %v", v, err)
	}
	v, err = c.Do(ctx, "LRANGE", "l", "0", "-1")
	if err != nil || v.Kind != KindArray || len(v.Elems) != 3 || string(v.Elems[0].Str) != "a" || len(v.Elems[2].Str) != 100<<10 {
		t.Fatalf("LRANGE = %v, %v", v.Kind, err)
	}
	_, err = c.Do(ctx, "NOSUCHCMD", "x")
	var se *ServerError
	if !errors.As(err, &se) || se.Cmd != "NOSUCHCMD" || se.Addr != srv.addr || !strings.HasPrefix(se.Msg, "ERR") {
		t.Fatalf("unknown command: %v, want a *ServerError naming %s and NOSUCHCMD", err, srv.addr)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping after a server error: %v", err)
	}
	// A reply over MaxValue is refused before it is read.
	small := dialTest(t, srv, Config{MaxValue: 1000})
	if _, err := small.Do(ctx, "LRANGE", "l", "0", "-1"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("LRANGE with MaxValue 1000: %v, want ErrTooLarge", err)
	}
	if err := small.Ping(ctx); err != nil {
		t.Fatalf("Ping after a refused reply: %v", err)
	}
	c.Close()
	if err := c.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close: %v, want ErrClosed", err)
	}
}

func TestSelectDB(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	c0 := dialTest(t, srv, Config{})
	c1, err := Dial(ctx, srv.url()+"/1", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if err := c1.Set(ctx, "only-in-1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c0.Get(ctx, "only-in-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("db 0 sees db 1's key: %v", err)
	}
	if _, err := c1.Get(ctx, "only-in-1"); err != nil {
		t.Fatalf("db 1: %v", err)
	}
	if _, err := Dial(ctx, srv.url()+"/99", Config{}); err == nil || !strings.Contains(err.Error(), "SELECT") {
		t.Fatalf("Dial with db 99: %v, want a SELECT error", err)
	}
}

func TestAuth(t *testing.T) {
	srv := startRedis(t, "--requirepass", "s3cret")
	ctx := context.Background()
	tests := []struct {
		name string
		url  string
		want []string // empty: Dial must succeed
	}{
		{"right password", "redis://:s3cret@" + srv.addr, nil},
		{"default user", "redis://default:s3cret@" + srv.addr, nil},
		{"wrong password", "redis://:wrong@" + srv.addr, []string{srv.addr, "AUTH", "WRONGPASS"}},
		{"unknown user", "redis://bob:s3cret@" + srv.addr, []string{srv.addr, "AUTH", "WRONGPASS"}},
		{"no password", "redis://" + srv.addr, []string{srv.addr, "PING", "NOAUTH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(ctx, tt.url, Config{})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				defer c.Close()
				st := NewStore(c)
				if err := st.PutFloats(ctx, "a", []float32{1}); err != nil {
					t.Fatalf("PutFloats after AUTH: %v", err)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			var se *ServerError
			if !errors.As(err, &se) {
				t.Errorf("error %v is not a *ServerError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

func TestDialRefused(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, err := Dial(context.Background(), "redis://"+addr, Config{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "dial") {
		t.Fatalf("Dial to a closed port: %v, want a dial error naming %s", err, addr)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string // error substring; empty: valid
	}{
		{Config{}, ""},
		{Config{Timeout: -1}, "Timeout"},
		{Config{MaxValue: -1}, "MaxValue"},
		{Config{PoolSize: -1}, "PoolSize"},
	}
	for _, tt := range tests {
		cfg := tt.cfg
		err := cfg.validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.cfg, err)
		case tt.want == "" && (cfg.Timeout != defaultTimeout || cfg.MaxValue != defaultMaxValue || cfg.PoolSize != defaultPoolSize):
			t.Errorf("%+v: defaults not filled: %+v", tt.cfg, cfg)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one naming %s", tt.cfg, err, tt.want)
		}
	}
	if _, err := Dial(context.Background(), "redis://127.0.0.1:1", Config{PoolSize: -2}); err == nil {
		t.Error("Dial accepted PoolSize -2")
	}
}

// TestStoreConcurrent has more workers than connections share one client,
// each checking it reads back exactly what it wrote.
func TestStoreConcurrent(t *testing.T) {
	srv := startRedis(t)
	st := NewStore(dialTest(t, srv, Config{PoolSize: 3}))
	ctx := context.Background()
	const workers, iters, n = 8, 20, 20000
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("worker/%d", w)
			got := make([]float32, n)
			for it := range iters {
				want := randomFloats(n, uint64(w*1000+it))
				if err := st.PutFloats(ctx, key, want); err != nil {
					errs <- err
					return
				}
				if err := st.GetFloats(ctx, key, got); err != nil {
					errs <- err
					return
				}
				if i, ok := sameBits(got, want); !ok {
					errs <- fmt.Errorf("worker %d iteration %d: float %d: got %v, want %v", w, it, i, got[i], want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if open := len(st.Client().slots); open > 3 {
		t.Errorf("%d connections open, PoolSize 3", open)
	}
}

// TestStoreServerKilled kills the server while workers are moving
// weights: every call must fail promptly, none may hang.
func TestStoreServerKilled(t *testing.T) {
	srv := startRedis(t)
	const timeout = 2 * time.Second
	st := NewStore(dialTest(t, srv, Config{Timeout: timeout, PoolSize: 2}))
	ctx := context.Background()
	v := randomFloats(1<<20, 5)
	if err := st.PutFloats(ctx, "w", v); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	failed := make(chan time.Time, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]float32, len(v))
			for {
				var err error
				if w%2 == 0 {
					err = st.PutFloats(ctx, "w", v)
				} else {
					err = st.GetFloats(ctx, "w", dst)
				}
				if err != nil {
					failed <- time.Now()
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	killed := time.Now()
	srv.kill()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout + 3*time.Second):
		t.Fatal("calls still running long after the server was killed")
	}
	close(failed)
	for at := range failed {
		if d := at.Sub(killed); d > timeout+time.Second {
			t.Errorf("a call failed %v after the kill, timeout %v", d, timeout)
		}
	}
	err := st.GetFloats(ctx, "w", make([]float32, len(v)))
	if err == nil || !strings.Contains(err.Error(), srv.addr) {
		t.Fatalf("GetFloats on a dead server: %v, want an error naming %s", err, srv.addr)
	}
}

// TestNoAllocs checks the float paths do not allocate in steady state.
func TestNoAllocs(t *testing.T) {
	srv := startRedis(t)
	st := NewStore(dialTest(t, srv, Config{}))
	ctx := context.Background()
	v := randomFloats(1<<16, 9)
	dst := make([]float32, len(v))
	if err := st.PutFloats(ctx, "a", v); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := st.PutFloats(ctx, "a", v); err != nil {
			t.Fatal(err)
		}
		if err := st.GetFloats(ctx, "a", dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("PutFloats+GetFloats: %v allocations per call, want 0", allocs)
	}
}

func BenchmarkStore(b *testing.B) {
	srv := startRedis(b)
	st := NewStore(dialTest(b, srv, Config{}))
	ctx := context.Background()
	for _, size := range []int{1 << 20, 16 << 20} {
		v := randomFloats(size/4, 1)
		dst := make([]float32, len(v))
		key := fmt.Sprintf("bench/%d", size)
		if err := st.PutFloats(ctx, key, v); err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("%dMiB", size>>20)
		b.Run("Put/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := st.PutFloats(ctx, key, v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Get/"+name, func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := st.GetFloats(ctx, key, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
