package centernet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"dsgd/protocol/center"
	"dsgd/servers/ps"
	"dsgd/servers/redisstore"
)

// ServeConfig is a center served as a parameter server.
type ServeConfig struct {
	// Listen is the HOST:PORT to serve on (an empty host means
	// 127.0.0.1); Token the job's shared secret; Timeout bounds every
	// exchange (0: the rpc default).
	Listen  string
	Token   string
	Timeout time.Duration
	// Center is the center served, made from the run's start (its
	// initial weights); Serve returns once every worker has finished.
	Center *center.Local
	// Workers is the job's worker count (0: unchecked): a worker of
	// another count, or a second worker with a live worker's rank, is
	// refused. Run (empty: unchecked) is the run's settings (train's
	// JoinFields): a worker that joins with others is refused.
	Workers int
	Run     string
	// Store is the URL of the Redis server the weights go through, empty
	// for none; Job names the job in its keys (empty: one derived from
	// Token, which a launcher makes per job), and Shard (I/K, empty for
	// an unsharded server) the shard.
	Store string
	Job   string
	Shard string
	// Out receives the server's lines: the address it serves on, each
	// error that closed a client's connection, the staleness of the
	// pushes at the end.
	Out io.Writer
	// OnServer, when set, is called with the server once it listens
	// (to export its figures).
	OnServer func(*ps.Server)
}

// ShardRange is the range [lo, hi) of the n parameters that shard spec
// (I/K: the I-th of K even ranges, from 0; empty: all of them) serves.
func ShardRange(spec string, n int) (lo, hi int, err error) {
	lo, hi = 0, n
	if spec != "" {
		var i, k int
		if _, err := fmt.Sscanf(spec, "%d/%d", &i, &k); err != nil || k < 1 || i < 0 || i >= k || k > hi {
			return 0, 0, fmt.Errorf("ServeConfig.Shard %q: want I/K with 0 <= I < K <= %d (the parameter count)", spec, hi)
		}
		b := ps.EvenBounds(hi, k)
		lo, hi = b[i], b[i+1]
	}
	return lo, hi, nil
}

// Serve serves cfg.Center until every worker has finished or ctx ends,
// then returns nil.
func Serve(ctx context.Context, cfg ServeConfig) error {
	local := cfg.Center
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-local.Finished():
			time.Sleep(200 * time.Millisecond) // let the last answers go out
			cancel()
		case <-ctx.Done():
		}
	}()
	if cfg.Store == "" {
		return servePS(ctx, cfg, ps.ServerConfig{})
	}
	st, err := redisstore.Open(ctx, cfg.Store, redisstore.Config{Timeout: cfg.Timeout})
	if err != nil {
		return fmt.Errorf("ServeConfig.Store: %w", err)
	}
	defer st.Close()
	job := jobName(cfg.Job, cfg.Token)
	host, _ := os.Hostname()
	lease, err := st.ClaimJob(ctx, job, fmt.Sprintf("dsgd ps on %s, %s, pid %d", host, cfg.Listen, os.Getpid()), 0)
	if err != nil {
		return fmt.Errorf("ServeConfig.Store: %w", err)
	}
	defer lease.Release(context.WithoutCancel(ctx))
	suffix := ":" + job
	if cfg.Shard != "" {
		suffix += ":" + strings.ReplaceAll(cfg.Shard, "/", "of")
	}
	return servePS(ctx, cfg, ps.ServerConfig{Store: st, KeySuffix: suffix})
}

// jobName is the name of the job in a blob store's keys: name, else one
// derived from the job's token (the launcher makes a random token per
// job; processes of one job share it).
func jobName(name, token string) string {
	if name != "" {
		return name
	}
	sum := sha256.Sum256([]byte("dsgd job\x00" + token))
	return "t" + hex.EncodeToString(sum[:6])
}

// servePS serves cfg.Center as a parameter server on cfg.Listen until
// ctx is done, then returns nil; sc holds the store and its key suffix,
// if any. It prints the address it serves on, and each error that closed
// a client's connection, to cfg.Out.
func servePS(ctx context.Context, cfg ServeConfig, sc ps.ServerConfig) error {
	var mu sync.Mutex // serialises the connection goroutines' lines
	sc.Token, sc.Timeout, sc.Workers, sc.Run, sc.Silence = cfg.Token, cfg.Timeout, cfg.Workers, cfg.Run, silence(cfg.Timeout)
	sc.ErrorLog = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(cfg.Out, "ps: %v\n", err)
	}
	srv, err := ps.Listen(cfg.Listen, cfg.Center, sc)
	if err != nil {
		return err
	}
	if cfg.OnServer != nil {
		cfg.OnServer(srv)
	}
	mu.Lock()
	if sc.Store != nil {
		fmt.Fprintf(cfg.Out, "ps: serving %d parameters on %s, weights through %s\n", srv.N(), srv.Addr(), "redis")
	} else {
		fmt.Fprintf(cfg.Out, "ps: serving %d parameters on %s\n", srv.N(), srv.Addr())
	}
	mu.Unlock()
	defer printStaleness(cfg.Out, srv.Staleness)
	return srv.Serve(ctx)
}

// printStaleness prints how stale the server's pushes were, and how many
// had each staleness, once it has served some.
func printStaleness(out io.Writer, get func() ps.Staleness) {
	st := get()
	if st.Pushes == 0 {
		return
	}
	var b strings.Builder
	for k, n := range st.Hist {
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		if k == len(st.Hist)-1 {
			fmt.Fprintf(&b, "%d+:%d", k, n)
		} else {
			fmt.Fprintf(&b, "%d:%d", k, n)
		}
	}
	fmt.Fprintf(out, "ps: %v (pushes by staleness %s)\n", st, b.String())
}

// silence is how long a joined worker may stay silent before the
// server drops it from the center: ps.DefaultSilence, or a third of the
// communication timeout when that is shorter, so that a frozen worker is
// dropped before the healthy ones' waits for it time out.
func silence(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout/3 < ps.DefaultSilence {
		return timeout / 3
	}
	return ps.DefaultSilence
}
