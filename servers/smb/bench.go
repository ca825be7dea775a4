package smb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// BenchConfig configures Bandwidth.
type BenchConfig struct {
	// Clients is the number of clients, each with its own connection pool
	// and its own buffer. Required (> 0).
	Clients int
	// Bytes is each client's buffer size; rounded down to whole float32s.
	// Required (>= 4).
	Bytes int64
	// Ops is the number of timed operations per client, alternately a
	// write and a read of its whole buffer (50/50, ShmCaffe IV.B). 0
	// means 8; odd counts are rounded up.
	Ops int
	// MaxFrame is passed to the server and clients (0: rpc's default).
	MaxFrame int
	// NoShm measures the TCP path: a store in the server's heap, every
	// byte over the connection. By default the store shares memory
	// (NewShmStore) and the clients, on its host, map it.
	NoShm bool
}

// BenchResult is one Bandwidth measurement.
type BenchResult struct {
	Clients int
	Bytes   int64 // per client
	// Moved is the number of bytes read and written in the timed part.
	Moved   int64
	Elapsed time.Duration
	// GBps is the aggregate read/write bandwidth: Moved/Elapsed in 1e9
	// bytes per second.
	GBps float64
	// MemcpyGBps is this machine's copy bandwidth for a buffer of the
	// same size (bytes copied per second, best of a few copies).
	MemcpyGBps float64
}

// Ratio is GBps over MemcpyGBps.
func (r BenchResult) Ratio() float64 {
	if r.MemcpyGBps == 0 {
		return 0
	}
	return r.GBps / r.MemcpyGBps
}

// Bandwidth measures the aggregate read/write bandwidth of a shared
// buffer server on loopback as ShmCaffe Fig. 7 does: it starts a server
// of a fresh Store on 127.0.0.1, and cfg.Clients clients each create
// their own buffer of cfg.Bytes and then read and write it whole, half
// the operations each, all at once. One untimed write and read per
// client warm the connections first. It also measures memcpy bandwidth
// for the same size, for comparison.
func Bandwidth(ctx context.Context, cfg BenchConfig) (BenchResult, error) {
	n := int(cfg.Bytes / 4)
	if cfg.Clients < 1 || n < 1 {
		return BenchResult{}, fmt.Errorf("smb: bandwidth benchmark with %d clients of %d bytes; need at least 1 client and 4 bytes", cfg.Clients, cfg.Bytes)
	}
	ops := max(cfg.Ops, 8)
	if cfg.Ops > 0 {
		ops = cfg.Ops + cfg.Ops%2
	}
	var tok [16]byte
	rand.Read(tok[:])
	scfg := Config{Token: hex.EncodeToString(tok[:]), MaxFrame: cfg.MaxFrame, MaxConns: 1, NoShm: cfg.NoShm}

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	store := NewStore(0)
	if !cfg.NoShm {
		store = NewShmStore(0, "")
	}
	srv, err := Listen("127.0.0.1:0", store, scfg)
	if err != nil {
		return BenchResult{}, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	defer func() { stop(); <-served }()

	clients := make([]*Client, cfg.Clients)
	bufs := make([][]float32, cfg.Clients)
	for i := range clients {
		cl, err := Dial(ctx, srv.Addr(), scfg)
		if err != nil {
			return BenchResult{}, err
		}
		defer cl.Close()
		key := "bench_" + strconv.Itoa(i)
		if _, err := cl.Create(ctx, key, n); err != nil {
			return BenchResult{}, err
		}
		bufs[i] = make([]float32, n)
		for j := range bufs[i] {
			bufs[i][j] = float32(j)
		}
		if err := cl.Write(ctx, key, 0, bufs[i]); err != nil {
			return BenchResult{}, err
		}
		if err := cl.Read(ctx, key, 0, bufs[i]); err != nil {
			return BenchResult{}, err
		}
		clients[i] = cl
	}

	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, cfg.Clients)
	)
	for i, cl := range clients {
		wg.Go(func() {
			key := "bench_" + strconv.Itoa(i)
			<-start
			for op := range ops {
				var err error
				if op%2 == 0 {
					err = cl.Write(ctx, key, 0, bufs[i])
				} else {
					err = cl.Read(ctx, key, 0, bufs[i])
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	for _, err := range errs {
		if err != nil {
			return BenchResult{}, err
		}
	}
	bytes := 4 * int64(n)
	moved := bytes * int64(ops) * int64(cfg.Clients)
	return BenchResult{
		Clients:    cfg.Clients,
		Bytes:      bytes,
		Moved:      moved,
		Elapsed:    elapsed,
		GBps:       float64(moved) / elapsed.Seconds() / 1e9,
		MemcpyGBps: MemcpyBandwidth(bytes, 5),
	}, nil
}

// MemcpyBandwidth returns the best of reps copies of a buffer of the
// given size (in 1e9 bytes copied per second).
func MemcpyBandwidth(bytes int64, reps int) float64 {
	src := make([]byte, bytes)
	dst := make([]byte, bytes)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src) // fault the pages in
	best := time.Duration(0)
	for range max(reps, 1) {
		t0 := time.Now()
		copy(dst, src)
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
	}
	if best <= 0 {
		best = time.Nanosecond
	}
	return float64(bytes) / best.Seconds() / 1e9
}
