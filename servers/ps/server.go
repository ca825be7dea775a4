package ps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"dsgd/comm/rpc"
	"dsgd/internal/runcfg"
	"dsgd/protocol/center"
	"dsgd/servers/ranks"
)

// ServerConfig configures a parameter server.
type ServerConfig struct {
	// Token is the shared secret clients must present.
	Token string
	// Timeout bounds every read and write (rpc.Config.Timeout); zero
	// means rpc.DefaultTimeout.
	Timeout time.Duration
	// MaxFrame bounds a message in bytes; zero means rpc.DefaultMaxFrame.
	// It must hold the N parameters (4N bytes plus a little).
	MaxFrame int
	// N is the number of parameters the center holds. Zero takes it from
	// the center's N method (center.Local has one).
	N int
	// Store, when set, turns on the blob store mode (see the package
	// documentation). Serve publishes the initial center under WeightsKey
	// before it accepts anyone.
	Store BlobStore
	// KeySuffix is appended to WeightsKey and told to clients for their
	// delta keys, so that shard servers sharing one store keep apart.
	KeySuffix string
	// ErrorLog receives the errors that closed a client's connection
	// (rpc.Config.ErrorLog), and one error per worker whose connection
	// closed without a Leave, was dropped for silence or refused as a
	// duplicate; nil discards them.
	ErrorLog func(error)
	// Workers is the job's worker count. A worker that joins saying
	// another count is refused, naming both. Zero skips the check.
	Workers int
	// Run is the job's run settings (runcfg.Fields' String: seed, solver,
	// scheme settings, net). A worker that joins with settings of its own
	// is refused if one differs, naming it and both values (issue 27: a
	// worker with base_lr 50 took an async job's healthy workers to NaN).
	// Empty skips the check.
	Run string
	// Silence is how long a joined worker's connection may stay silent
	// (no call running, no call or heartbeat arriving) before the worker
	// is made to leave the center, so that a frozen process no longer
	// holds back SSP, rounds or turns; its next call rejoins it. Clients
	// send heartbeats every Silence/4 while they compute. Zero means
	// DefaultSilence; negative turns the watch off.
	Silence time.Duration
}

// Server serves a center.Center over rpc. Its methods are safe for
// concurrent use.
//
// A worker that joined over a connection which then closes without the
// worker's Leave (its process was killed, its host lost) leaves the center
// with an error at once, so that it no longer holds back SSP waits,
// weed-out rounds or round-robin turns. Joining again, over a new
// connection, makes it live again with its iteration count.
type Server struct {
	c      center.Center
	n      int
	store  BlobStore
	suffix string
	rpc    *rpc.Server
	elog   func(error)

	// ownMu guards owners and life.
	ownMu sync.Mutex
	// owners is the connection each live worker last joined over.
	owners ranks.Table
	// life is when each joined connection was last heard from (life.go).
	life map[*rpc.Conn]*connLife

	workers int
	run     runcfg.Fields
	silence time.Duration

	stale staleTracker // how old the weights behind each push were

	dirty atomic.Bool // the center changed since the last publication
	// pubMu guards version and pub, and orders publications.
	pubMu   sync.Mutex
	version int64
	pub     []float32
}

// checkRun refuses a joining worker whose run settings differ from the
// server's, naming the first that differs and both values.
func (s *Server) checkRun(ctx context.Context, w int, text string) error {
	if len(s.run) == 0 || text == "" {
		return nil
	}
	theirs, err := runcfg.Parse(text)
	if err != nil {
		return fmt.Errorf("ps: worker %d from %s: %w", w, connAddr(ctx), err)
	}
	if d, differ := runcfg.Compare(s.run, theirs); differ {
		return fmt.Errorf("ps: worker %d from %s runs with %s %s, but this server's job has %s: every worker must run the server's configuration", w, connAddr(ctx), d.Name, d.Theirs, d.Mine)
	}
	return nil
}

// sized is what a center offers to tell its parameter count.
type sized interface{ N() int }

// Listen listens on addr (an empty host means 127.0.0.1) for clients of
// the center c, which must be safe for concurrent use.
func Listen(addr string, c center.Center, cfg ServerConfig) (*Server, error) {
	n := cfg.N
	if n == 0 {
		if s, ok := c.(sized); ok {
			n = s.N()
		}
	}
	if n <= 0 {
		return nil, fmt.Errorf("ps: the center's parameter count is unknown (%d): set ServerConfig.N", n)
	}
	if need := 4*n + 4096; cfg.MaxFrame != 0 && cfg.MaxFrame < need {
		return nil, fmt.Errorf("ps: max frame %d bytes cannot carry %d parameters (need %d)", cfg.MaxFrame, n, need)
	}
	run, err := runcfg.Parse(cfg.Run)
	if err != nil {
		return nil, fmt.Errorf("ps: %w", err)
	}
	s := &Server{c: c, n: n, store: cfg.Store, suffix: cfg.KeySuffix, elog: cfg.ErrorLog, run: run,
		life:    map[*rpc.Conn]*connLife{},
		workers: cfg.Workers, silence: cfg.Silence}
	if s.silence == 0 {
		s.silence = DefaultSilence
	}
	s.rpc, err = rpc.Listen(addr, rpc.Config{Token: cfg.Token, Timeout: cfg.Timeout, MaxFrame: cfg.MaxFrame, ErrorLog: cfg.ErrorLog}, s.handle)
	if err != nil {
		return nil, fmt.Errorf("ps: %w", err)
	}
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.rpc.Addr() }

// N returns the number of parameters served.
func (s *Server) N() int { return s.n }

// Serve serves clients until ctx is done or Close is called (then it
// returns nil). In blob store mode it first publishes the center.
func (s *Server) Serve(ctx context.Context) error {
	if s.store != nil {
		s.pubMu.Lock()
		err := s.publish(ctx)
		s.pubMu.Unlock()
		if err != nil {
			s.rpc.Close()
			return err
		}
	}
	if s.silence > 0 {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.watch(wctx)
	}
	return s.rpc.Serve(ctx)
}

// Close stops the server.
func (s *Server) Close() error { return s.rpc.Close() }

// publish puts the current center under the weights key as a new
// version; s.pubMu is held. It reads the center as an observer, so it
// never waits for a round-robin turn.
func (s *Server) publish(ctx context.Context) error {
	s.dirty.Store(false)
	if s.pub == nil {
		s.pub = make([]float32, s.n)
	}
	if err := s.c.Pull(ctx, center.Observer, s.pub); err != nil {
		s.dirty.Store(true)
		return err
	}
	if err := s.store.PutFloats(ctx, WeightsKey+s.suffix, s.pub); err != nil {
		s.dirty.Store(true)
		return fmt.Errorf("ps: publishing the center weights under %s: %w", WeightsKey+s.suffix, err)
	}
	s.version++
	return nil
}

// publishFrom publishes w, a read of the center: the store's weights
// become w's copy. s.pubMu is held.
func (s *Server) publishFrom(ctx context.Context, w []float32) error {
	if s.pub == nil {
		s.pub = make([]float32, s.n)
	}
	copy(s.pub, w)
	s.dirty.Store(false)
	if err := s.store.PutFloats(ctx, WeightsKey+s.suffix, s.pub); err != nil {
		s.dirty.Store(true)
		return fmt.Errorf("ps: publishing the center weights under %s: %w", WeightsKey+s.suffix, err)
	}
	s.version++
	return nil
}

func (s *Server) checkLen(what string, w, n int) error {
	if n != s.n {
		return fmt.Errorf("ps: worker %d sent %s of %d values, the server holds %d", w, what, n, s.n)
	}
	return nil
}

func (s *Server) handle(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
	w := int(req.Ints[0])
	if int64(w) != req.Ints[0] {
		return fmt.Errorf("ps: worker id %d out of range", req.Ints[0])
	}
	defer s.heard(ctx, req.Op)()
	switch req.Op {
	case opPing:
	case opInfo:
		resp.Ints[0] = int64(s.n)
		if s.silence > 0 {
			resp.Ints[3] = max(s.silence/4, time.Millisecond).Milliseconds()
		}
		if s.store != nil {
			s.pubMu.Lock()
			resp.Ints[1] = s.version
			s.pubMu.Unlock()
			resp.Ints[2] = 1
			resp.Text = s.suffix
		}
	case opJoin:
		if said := int(req.Ints[1]); said != 0 && s.workers != 0 && said != s.workers {
			err := fmt.Errorf("ps: worker %d from %s runs a job of %d workers, but this server serves %d (--workers): start both with the same count", w, connAddr(ctx), said, s.workers)
			if s.elog != nil {
				s.elog(err)
			}
			return err
		}
		if err := s.checkRun(ctx, w, req.Text); err != nil {
			if s.elog != nil {
				s.elog(err)
			}
			return err
		}
		iter, err := s.join(ctx, w)
		resp.Ints[0] = int64(iter)
		return err
	case opPull:
		buf := resp.Buffer(s.n)
		if err := s.c.Pull(ctx, w, buf); err != nil {
			return err
		}
		s.stale.readBy(w)
		resp.Data = buf
	case opPush:
		if err := s.checkLen("a delta", w, len(req.Data)); err != nil {
			return err
		}
		defer s.dirty.Store(true)
		if err := s.c.Push(ctx, w, req.Data); err != nil {
			return err
		}
		s.stale.pushedBy(w)
	case opElastic:
		if err := s.checkLen("weights", w, len(req.Data)); err != nil {
			return err
		}
		defer s.dirty.Store(true)
		if err := s.c.Elastic(ctx, w, req.Data, float32(req.Floats[0])); err != nil {
			return err
		}
		s.stale.updated()
		resp.Data = req.Data
	case opRound:
		if err := s.checkLen("gradients", w, len(req.Data)); err != nil {
			return err
		}
		defer s.dirty.Store(true)
		next, dropped, err := s.c.Round(ctx, w, int(req.Ints[1]), req.Data)
		resp.Ints[0], resp.Ints[1] = int64(next), b2i(dropped)
		return err
	case opElasticKey:
		if s.store == nil {
			return errors.New("ps: this server has no blob store")
		}
		x := resp.Buffer(s.n)
		if err := s.store.GetFloats(ctx, req.Text, x); err != nil {
			return fmt.Errorf("ps: getting worker %d's weights from %s: %w", w, req.Text, err)
		}
		defer s.dirty.Store(true)
		if err := s.c.Elastic(ctx, w, x, float32(req.Floats[0])); err != nil {
			return err
		}
		s.stale.updated()
		if err := s.store.PutFloats(ctx, req.Text, x); err != nil {
			return fmt.Errorf("ps: putting worker %d's exchanged weights under %s: %w", w, req.Text, err)
		}
	case opRoundKey:
		if s.store == nil {
			return errors.New("ps: this server has no blob store")
		}
		g := resp.Buffer(s.n)
		if err := s.store.GetFloats(ctx, req.Text, g); err != nil {
			return fmt.Errorf("ps: getting worker %d's gradients from %s: %w", w, req.Text, err)
		}
		defer s.dirty.Store(true)
		next, dropped, err := s.c.Round(ctx, w, int(req.Ints[1]), g)
		resp.Ints[0], resp.Ints[1] = int64(next), b2i(dropped)
		return err
	case opClosed:
		next, err := s.c.Closed(ctx, w, int(req.Ints[1]))
		resp.Ints[0] = int64(next)
		return err
	case opClock:
		stop, err := s.c.Clock(ctx, w, int(req.Ints[1]), int(req.Ints[2]))
		resp.Ints[0] = b2i(stop)
		return err
	case opLeave:
		var cause error
		if req.Text != "" {
			cause = errors.New(req.Text)
		}
		s.left(w)
		return s.c.Leave(ctx, w, cause)
	case opPushKey:
		if s.store == nil {
			return errors.New("ps: this server has no blob store")
		}
		buf := resp.Buffer(s.n)
		if err := s.store.GetFloats(ctx, req.Text, buf); err != nil {
			return fmt.Errorf("ps: getting worker %d's delta from %s: %w", w, req.Text, err)
		}
		// The push and its publication are one step for the pulls, so
		// a pull never republishes a push that is being published.
		s.pubMu.Lock()
		defer s.pubMu.Unlock()
		if err := s.c.Push(ctx, w, buf); err != nil {
			return err
		}
		s.stale.pushedBy(w)
		if err := s.publish(ctx); err != nil {
			return err
		}
	case opFinal:
		fp, ok := s.c.(center.FinalPuller)
		if !ok {
			return errors.New("ps: this server's center cannot wait for the end of the run")
		}
		buf := resp.Buffer(s.n)
		if err := fp.PullFinal(ctx, buf); err != nil {
			return err
		}
		if s.store == nil {
			resp.Data = buf
			return nil
		}
		s.pubMu.Lock()
		defer s.pubMu.Unlock()
		if err := s.publish(ctx); err != nil {
			return err
		}
		resp.Ints[0] = s.version
	case opVersion:
		if s.store == nil {
			return errors.New("ps: this server has no blob store")
		}
		if w != center.Observer {
			// A worker's read follows the center's rules as on the direct
			// path: it waits for its round-robin turn and reads as of the
			// global clock (SSP's clocked reads), and the store then holds
			// exactly what it read: a clock moves the readable weights
			// without a push, so the dirty flag alone would serve a stale
			// publication.
			buf := resp.Buffer(s.n)
			if err := s.c.Pull(ctx, w, buf); err != nil {
				return err
			}
			// The gated read has waited; what is readable now (under the
			// publication lock, so no newer publication is rolled back)
			// is what the worker reads.
			s.pubMu.Lock()
			defer s.pubMu.Unlock()
			if err := s.c.Pull(ctx, center.Observer, buf); err != nil {
				return err
			}
			if s.pub == nil || !slices.Equal(buf, s.pub) {
				if err := s.publishFrom(ctx, buf); err != nil {
					return err
				}
			}
			resp.Ints[0] = s.version
			s.stale.readBy(w)
			return nil
		}
		s.pubMu.Lock()
		defer s.pubMu.Unlock()
		if s.dirty.Load() {
			if err := s.publish(ctx); err != nil {
				return err
			}
		}
		resp.Ints[0] = s.version
		// The worker reads what this version check says is current (or
		// newer): its staleness counts from here.
		s.stale.readBy(w)
	default:
		return fmt.Errorf("ps: unknown operation %d", req.Op)
	}
	return nil
}

// join joins worker w to the center and records that it did so over the
// connection of ctx, whose end it watches. ownMu is held across the Join
// so that a connection's departure (dropConn) cannot undo a newer join.
func (s *Server) join(ctx context.Context, w int) (int, error) {
	conn := rpc.ConnFrom(ctx)
	s.ownMu.Lock()
	if err := s.duplicate(ctx, w, conn); err != nil {
		s.ownMu.Unlock()
		if s.elog != nil {
			s.elog(err)
		}
		return 0, err
	}
	iter, err := s.c.Join(ctx, w)
	watch := false
	if err == nil && conn != nil {
		watch = s.owners.Take(w, conn)
		s.joinedOver(conn, w)
	}
	s.ownMu.Unlock()
	if watch {
		conn.OnClose(func() { s.dropConn(ctx, conn) })
	}
	return iter, err
}

// left forgets worker w's connection: it left in order.
func (s *Server) left(w int) {
	s.ownMu.Lock()
	if c := s.owners.Holder(w); c != nil {
		if l := s.life[c]; l != nil {
			l.silent = slices.DeleteFunc(l.silent, func(v int) bool { return v == w })
		}
	}
	s.owners.Free(w)
	s.ownMu.Unlock()
}

// dropConn makes every worker still owned by the closed connection conn
// leave the center with an error, and reports each to the error log. A
// worker that has joined again over another connection since is not
// touched. ctx is the server's, which ends when the server closes.
func (s *Server) dropConn(ctx context.Context, conn *rpc.Conn) {
	var msgs []error
	s.ownMu.Lock()
	for _, w := range s.owners.Drop(conn) {
		cause := fmt.Errorf("ps: worker %d's connection from %s closed without a leave", w, conn.RemoteAddr())
		if err := s.c.Leave(ctx, w, cause); err != nil {
			msgs = append(msgs, fmt.Errorf("%w; making it leave the center: %w", cause, err))
		} else {
			msgs = append(msgs, fmt.Errorf("%w: it left the center", cause))
		}
	}
	delete(s.life, conn)
	s.ownMu.Unlock()
	if s.elog != nil {
		for _, err := range msgs {
			s.elog(err)
		}
	}
}
