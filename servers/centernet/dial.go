package centernet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"dsgd/protocol/center"
	"dsgd/servers/ps"
	"dsgd/servers/redisstore"
	"dsgd/servers/smb"
)

// DialConfig is how a worker process reaches its center.
type DialConfig struct {
	// Addr is the parameter server's HOST:PORT (several, comma-separated,
	// for a sharded one, in shard order), or smb://HOST:PORT for the
	// shared buffer server.
	Addr string
	// Token is the job's shared secret; Timeout bounds every exchange,
	// and the retries of a server not listening yet.
	Token   string
	Timeout time.Duration
	// NoShm keeps the shared buffer server's traffic off shared memory.
	NoShm bool
	// Run is the run's settings (train's JoinFields): the server refuses
	// a worker that joins with others.
	Run string
	// Workers is the job's worker count (of the center's workers).
	Workers int
	// Weights are the model's initial weights: their count must be the
	// server's; the shared buffer server starts from them.
	Weights []float32
	// Finish and MaxIter are the aligned-termination rule and the
	// iterations it compares with (the shared buffer server applies them
	// on the workers' side).
	Finish  center.Finish
	MaxIter int
	// MaxUpdateNorm bounds an update's L2 norm (0: none) where the
	// worker's side applies it (the shared buffer server).
	MaxUpdateNorm float64
	// Store is the URL of the Redis server the weights go through
	// (redis://...), empty for none.
	Store string
	// Releases, when set, reports at close whether this worker is the
	// one (rank 0 of its group) that releases the shared buffers.
	Releases func() bool
}

// Dial connects to the center cfg names, retrying until the server
// answers or cfg.Timeout passes (a launcher starts both at once). The
// returned func closes the connection.
func Dial(ctx context.Context, cfg DialConfig) (center.Center, func(), error) {
	if cfg.Addr == "" {
		return nil, nil, errors.New("DialConfig.Addr: this scheme's workers need the address of their parameter server (dsgd ps) or shared buffer server (dsgd smb)")
	}
	deadline := time.Now().Add(cfg.Timeout)
	for {
		c, closer, err := dialOnce(ctx, cfg)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil || !isDialRefused(err) {
			return c, closer, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// isDialRefused reports whether err is a refused connection: the server
// is not listening yet.
func isDialRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func dialOnce(ctx context.Context, cfg DialConfig) (center.Center, func(), error) {
	addr, token, timeout := cfg.Addr, cfg.Token, cfg.Timeout
	if rest, ok := strings.CutPrefix(addr, "smb://"); ok {
		cl, err := smb.Dial(ctx, rest, smb.Config{Token: token, Timeout: timeout, NoShm: cfg.NoShm, Run: cfg.Run})
		if err != nil {
			return nil, nil, fmt.Errorf("DialConfig.Addr %s: %w", addr, err)
		}
		w := cfg.Weights
		// The worker claims its rank before it joins: the server refuses
		// a second live worker of that rank and another --workers.
		c, err := smb.NewClaimingCenter(cl, smb.CenterConfig{Workers: cfg.Workers, N: len(w), Weights: w, Finish: cfg.Finish, MaxIter: cfg.MaxIter,
			MaxUpdateNorm: cfg.MaxUpdateNorm})
		if err != nil {
			cl.Close()
			return nil, nil, fmt.Errorf("DialConfig.Addr %s: %w", addr, err)
		}
		return c, func() {
			// Worker 0 releases the buffers after its last read of W_g
			// (ShmCaffe III.B); the last worker to leave frees them.
			// Best effort: the run's results are already out.
			if cfg.Releases != nil && cfg.Releases() {
				rctx, cancel := context.WithTimeout(context.Background(), timeout)
				c.Release(rctx)
				cancel()
			}
			cl.Close()
		}, nil
	}
	pc := ps.ClientConfig{Token: token, Timeout: timeout, Workers: cfg.Workers, Run: cfg.Run}
	var st *redisstore.Store
	if cfg.Store != "" {
		var err error
		if st, err = redisstore.Open(ctx, cfg.Store, redisstore.Config{Timeout: timeout}); err != nil {
			return nil, nil, fmt.Errorf("DialConfig.Store: %w", err)
		}
		pc.Store = st
	}
	c, err := ps.DialSharded(ctx, strings.Split(addr, ","), pc)
	if err != nil {
		if st != nil {
			st.Close()
		}
		return nil, nil, fmt.Errorf("DialConfig.Addr %s: %w", addr, err)
	}
	if c.N() != len(cfg.Weights) {
		c.Close()
		return nil, nil, fmt.Errorf("DialConfig.Addr %s serves %d parameters, this model has %d: the server runs another model", addr, c.N(), len(cfg.Weights))
	}
	return c, func() {
		c.Close()
		if st != nil {
			st.Close()
		}
	}, nil
}
