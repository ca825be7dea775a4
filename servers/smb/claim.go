package smb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"dsgd/comm/rpc"
	"dsgd/internal/runcfg"
	"dsgd/servers/ranks"
)

// Rank claims. The server has no update logic, but it is the one place
// that sees every worker, so it is where two workers started with the
// same --rank, or with another --workers than the rest of the job, are
// told apart (issue 11, item 3; package ps does the same at its Join;
// both keep the record in a ranks.Table).
// Before a worker joins, its Client claims the rank over a connection of
// its own that it keeps for its life (Client.Claim): the server ties the
// rank to that connection and frees it when the connection ends, as it
// does when the worker's process dies. So a second live claimant of a
// rank is refused, naming both, while a restarted worker takes its rank
// back (a killed asynchronous worker rejoins and continues its count).
// The first claim fixes the job's worker count unless the server was
// started with one (Config.Workers); a claim with another count is
// refused, naming both.

// ErrRank is the error of a refused rank claim: a rank another live
// worker holds, a worker count other than the job's, or a rank outside
// it.
var ErrRank = errors.New("rank refused")

// claimGrace is how long a claim waits for the connection that holds
// its rank to close before refusing it: a restarted worker may dial
// before the server has seen its predecessor's connection end.
var claimGrace = time.Second

// claims is a server's record of which connection holds each rank.
type claims struct {
	// mu guards everything below.
	mu      sync.Mutex
	workers int    // the job's worker count; 0 until the first claim
	setBy   string // who fixed workers, for the refusal's message
	// run is the job's run settings, from the first claim that had any,
	// and runBy who that was.
	run   runcfg.Fields
	runBy string
	ranks ranks.Table // which connection holds each rank
	// ping is how often a claimant should speak: a quarter of the
	// server's idle timeout, after which an idle connection (and so its
	// claim) is closed.
	ping time.Duration
	elog func(error)
}

func newClaims(cfg Config) *claims {
	t := cfg.Timeout
	if t == 0 {
		t = rpc.DefaultTimeout
	}
	c := &claims{
		workers: cfg.Workers,
		ping:    max(10*t/4, time.Millisecond),
		elog:    cfg.ErrorLog,
	}
	if cfg.Workers > 0 {
		c.setBy = "its --workers"
	}
	return c
}

// claim gives rank of a job of workers workers to the connection of ctx,
// or refuses it (ErrRank). Claiming a rank the connection already holds
// is a keep-alive.
func (c *claims) claim(ctx context.Context, rank, workers int, run string) error {
	conn := rpc.ConnFrom(ctx)
	if conn == nil {
		return fmt.Errorf("smb: %w: a claim needs a connection", ErrInvalid)
	}
	if workers < 1 || workers > maxSlots-2 {
		return c.refuse(fmt.Errorf("smb: %w: rank %d from %s claims a job of %d workers; need 1 to %d", ErrRank, rank, conn.RemoteAddr(), workers, maxSlots-2))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.workers == 0 {
		c.workers, c.setBy = workers, fmt.Sprintf("rank %d from %s, the first to claim", rank, conn.RemoteAddr())
	}
	if workers != c.workers {
		return c.refuse(fmt.Errorf("smb: %w: rank %d from %s runs a job of %d workers (--workers), but this server's job has %d (set by %s): start every worker with the same count",
			ErrRank, rank, conn.RemoteAddr(), workers, c.workers, c.setBy))
	}
	if run != "" {
		theirs, err := runcfg.Parse(run)
		if err != nil {
			return c.refuse(fmt.Errorf("smb: %w: rank %d from %s: %w", ErrRank, rank, conn.RemoteAddr(), err))
		}
		if c.run == nil {
			c.run, c.runBy = theirs, fmt.Sprintf("rank %d from %s, the first to claim", rank, conn.RemoteAddr())
		} else if d, differ := runcfg.Compare(c.run, theirs); differ {
			return c.refuse(fmt.Errorf("smb: %w: rank %d from %s runs with %s %s, but this server's job has %s (set by %s): every worker must run the same configuration",
				ErrRank, rank, conn.RemoteAddr(), d.Name, d.Theirs, d.Mine, c.runBy))
		}
	}
	if rank < 0 || rank >= workers {
		return c.refuse(fmt.Errorf("smb: %w: rank %d from %s is outside a job of %d workers (ranks 0 to %d)", ErrRank, rank, conn.RemoteAddr(), workers, workers-1))
	}
	held, err := c.ranks.Await(ctx, &c.mu, rank, conn, claimGrace)
	if err != nil {
		return err
	}
	if held != nil {
		return c.refuse(fmt.Errorf("smb: %w: rank %d is already held by a live worker connected from %s; refusing a second rank %d from %s (two workers started with the same --rank? a restarted worker is accepted once its predecessor's connection has closed)",
			ErrRank, rank, held.RemoteAddr(), rank, conn.RemoteAddr()))
	}
	if c.ranks.Take(rank, conn) {
		conn.OnClose(func() { c.release(conn) })
	}
	return nil
}

// refuse logs err (the operator sees whom the server turned away) and
// returns it.
func (c *claims) refuse(err error) error {
	if c.elog != nil {
		c.elog(err)
	}
	return err
}

// release frees every rank conn holds: its worker stopped or died.
func (c *claims) release(conn *rpc.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ranks.Drop(conn)
}

// claimHold is a Client's side of its claims: the connection that holds
// them, and the goroutine that keeps it alive.
type claimHold struct {
	// callMu serialises the use of conn.
	callMu sync.Mutex
	conn   *rpc.Client

	// mu guards ranks, err, closed and cancel.
	mu      sync.Mutex
	ranks   map[int]int // rank → the worker count it was claimed with
	err     error       // a claim lost for good (Err)
	closed  bool
	cancel  context.CancelFunc // ends keepClaims
	stopped sync.WaitGroup
}

// Claim claims rank of a job of workers workers at the server, over a
// connection the Client keeps for this purpose until Close, and returns
// an error wrapping ErrRank when the server refuses: another live worker
// holds the rank (the server waits a moment for a predecessor's
// connection to close first, so a restarted worker is accepted), or the
// job has another worker count, or the rank is outside it. The Client
// renews its claims over that connection often enough that the server
// never closes it for idleness; should the connection fail, the Client
// dials again and claims its ranks anew, and when that is refused Err
// says so.
func (cl *Client) Claim(ctx context.Context, rank, workers int) error {
	h := &cl.hold
	h.callMu.Lock()
	defer h.callMu.Unlock()
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return fmt.Errorf("smb: client of %s is closed", cl.addr)
	}
	ping, err := h.claimOn(ctx, cl, rank, workers)
	if err != nil {
		return fmt.Errorf("smb: claiming rank %d at %s: %w", rank, cl.addr, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("smb: client of %s is closed", cl.addr)
	}
	if h.ranks == nil {
		h.ranks = map[int]int{}
		kctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		h.stopped.Add(1)
		go cl.keepClaims(kctx, ping)
	}
	h.ranks[rank] = workers
	return nil
}

// claimOn sends one claim, dialling the claims' connection if there is
// none, and returns the renewal interval the server asks for. A failed
// connection is dropped; the server's refusal keeps it. h.callMu is held.
func (h *claimHold) claimOn(ctx context.Context, cl *Client, rank, workers int) (time.Duration, error) {
	if h.conn == nil {
		c, err := rpc.Dial(ctx, cl.addr, cl.rcfg)
		if err != nil {
			return 0, err
		}
		h.conn = c
	}
	var resp rpc.Response
	err := h.conn.Call(ctx, &rpc.Request{Op: opClaim, Ints: [rpc.NumInts]int64{int64(rank), int64(workers)}, Text: cl.cfg.Run}, &resp)
	if err != nil {
		if !isRemote(err) {
			h.conn.Close()
			h.conn = nil
		}
		return 0, remoteError(err)
	}
	return max(time.Duration(resp.Ints[0])*time.Millisecond, time.Millisecond), nil
}

func isRemote(err error) bool {
	var re *rpc.RemoteError
	return errors.As(err, &re)
}

// Err returns why a claim of this Client was lost for good (the server
// gave its rank to another worker while this one's connection was
// down), or nil.
func (cl *Client) Err() error {
	h := &cl.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// keepClaims renews the claims every ping interval until ctx ends (the
// Client closes): the renewal is the connection's keep-alive, and after a
// failed connection it claims the ranks anew over a fresh one.
func (cl *Client) keepClaims(ctx context.Context, ping time.Duration) {
	h := &cl.hold
	defer h.stopped.Done()
	t := time.NewTicker(ping)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		lost := h.err != nil
		ranks := make(map[int]int, len(h.ranks))
		for r, w := range h.ranks {
			ranks[r] = w
		}
		h.mu.Unlock()
		if lost {
			return
		}
		h.callMu.Lock()
		for rank, workers := range ranks {
			_, err := h.claimOn(ctx, cl, rank, workers)
			if err == nil {
				continue
			}
			if isRemote(err) && ctx.Err() == nil {
				h.mu.Lock()
				h.err = fmt.Errorf("smb: rank %d lost its claim at %s while its connection was down: %w", rank, cl.addr, err)
				h.mu.Unlock()
			}
			break // the server is away: the next tick tries again
		}
		h.callMu.Unlock()
	}
}

// closeClaims stops the renewals and closes the claims' connection, which
// frees the ranks at the server.
func (cl *Client) closeClaims() {
	h := &cl.hold
	h.mu.Lock()
	h.closed = true
	cancel := h.cancel
	h.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	h.stopped.Wait()
	h.callMu.Lock()
	if h.conn != nil {
		h.conn.Close()
		h.conn = nil
	}
	h.callMu.Unlock()
}

// ClaimingCenter is a Center whose Join first claims the worker's rank at
// the server (Client.Claim), and whose Clock reports a claim lost for
// good; the rest is Center's.
type ClaimingCenter struct {
	*Center
	cl *Client
}

// NewClaimingCenter returns the adapter over cl, claiming ranks of a job
// of cfg.Workers workers.
func NewClaimingCenter(cl *Client, cfg CenterConfig) (*ClaimingCenter, error) {
	c, err := NewCenter(cl, cfg)
	if err != nil {
		return nil, err
	}
	return &ClaimingCenter{Center: c, cl: cl}, nil
}

// Join claims rank w, then joins the center as Center.Join does.
func (c *ClaimingCenter) Join(ctx context.Context, w int) (int, error) {
	if err := c.checkWorker(w); err != nil {
		return 0, err
	}
	if err := c.cl.Claim(ctx, w, c.cfg.Workers); err != nil {
		return 0, err
	}
	return c.Center.Join(ctx, w)
}

// Clock fails once the Client's claim is lost (Client.Err), else is
// Center.Clock.
func (c *ClaimingCenter) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	if err := c.cl.Err(); err != nil {
		return false, err
	}
	return c.Center.Clock(ctx, w, iter, s)
}
