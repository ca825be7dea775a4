package ps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"dsgd/comm/rpc"
	"dsgd/protocol/center"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Token is the server's shared secret.
	Token string
	// Timeout bounds every read and write, and the wait for an answer or
	// a keep-alive (rpc.Config.Timeout); zero means rpc.DefaultTimeout.
	Timeout time.Duration
	// MaxFrame bounds a message in bytes; zero means rpc.DefaultMaxFrame.
	MaxFrame int
	// Store, when set, moves Push and Pull through the blob store; the
	// server must have one too.
	Store BlobStore
	// Workers is the job's worker count, told to the server with every
	// Join so that it refuses a worker of another job size; 0 says
	// nothing.
	Workers int
	// Run is the worker's run settings (runcfg.Fields' String), told to
	// the server with every Join so that it refuses a worker of another
	// configuration (ServerConfig.Run); empty says nothing.
	Run string
}

// Client is a center.Center whose operations run on a parameter server.
// It is safe for concurrent use; its calls are serialised on one
// connection.
type Client struct {
	rpc     *rpc.Client
	n       int
	store   BlobStore
	suffix  string
	version atomic.Int64

	// Closed waits on a connection of its own, so that the worker's
	// other calls go on meanwhile.
	addr   string
	rcfg   rpc.Config
	sideMu sync.Mutex // guards side
	side   *rpc.Client

	workers int
	run     string
	beat    heartbeat
}

var _ center.Center = (*Client)(nil)

// Dial connects to the parameter server at addr and asks it for the
// number of parameters it holds.
func Dial(ctx context.Context, addr string, cfg ClientConfig) (*Client, error) {
	rc, err := rpc.Dial(ctx, addr, rpc.Config{Token: cfg.Token, Timeout: cfg.Timeout, MaxFrame: cfg.MaxFrame})
	if err != nil {
		return nil, fmt.Errorf("ps: %w", err)
	}
	var resp rpc.Response
	if err := rc.Call(ctx, &rpc.Request{Op: opInfo}, &resp); err != nil {
		rc.Close()
		return nil, fmt.Errorf("ps: %w", err)
	}
	rcfg := rpc.Config{Token: cfg.Token, Timeout: cfg.Timeout, MaxFrame: cfg.MaxFrame}
	c := &Client{rpc: rc, n: int(resp.Ints[0]), store: cfg.Store, suffix: resp.Text, addr: addr, rcfg: rcfg, workers: cfg.Workers, run: cfg.Run}
	if c.n <= 0 {
		rc.Close()
		return nil, fmt.Errorf("ps: server %s holds %d parameters", addr, c.n)
	}
	if cfg.Store != nil && resp.Ints[2] == 0 {
		rc.Close()
		return nil, fmt.Errorf("ps: the client has a blob store but server %s has none; start both with the same store (ClientConfig.Store, ServerConfig.Store)", addr)
	}
	c.version.Store(resp.Ints[1])
	c.beat.start(c.rpc, time.Duration(resp.Ints[3])*time.Millisecond)
	return c, nil
}

// N returns the number of parameters the server holds.
func (c *Client) N() int { return c.n }

// Addr returns the server's address.
func (c *Client) Addr() string { return c.rpc.Addr() }

// LocalAddr returns the address the server sees this client's calls
// come from.
func (c *Client) LocalAddr() string { return c.rpc.LocalAddr() }

// Version returns the version of the center weights the last Pull got
// in blob store mode (each server publication is one version).
func (c *Client) Version() int64 { return c.version.Load() }

// Close closes the connections.
func (c *Client) Close() error {
	c.beat.stop()
	c.sideMu.Lock()
	if c.side != nil {
		c.side.Close()
		c.side = nil
	}
	c.sideMu.Unlock()
	return c.rpc.Close()
}

// Closed implements center.Center, on a second connection made on first
// use: the wait must not hold up the worker's Round.
func (c *Client) Closed(ctx context.Context, w, iter int) (int, error) {
	c.sideMu.Lock()
	if c.side == nil {
		sc, err := rpc.Dial(ctx, c.addr, c.rcfg)
		if err != nil {
			c.sideMu.Unlock()
			return 0, fmt.Errorf("ps: %w", err)
		}
		c.side = sc
	}
	side := c.side
	c.sideMu.Unlock()
	var resp rpc.Response
	if err := side.Call(ctx, &rpc.Request{Op: opClosed, Ints: [rpc.NumInts]int64{int64(w), int64(iter)}}, &resp); err != nil {
		return 0, fmt.Errorf("ps: %w", err)
	}
	return int(resp.Ints[0]), nil
}

// PullFinal implements center.FinalPuller: the server answers once no
// worker is present, with the center weights (through the store in blob
// store mode).
func (c *Client) PullFinal(ctx context.Context, dst []float32) error {
	if err := c.checkLen("final pull into a buffer", len(dst)); err != nil {
		return err
	}
	req := rpc.Request{Op: opFinal, Ints: [rpc.NumInts]int64{int64(center.Observer)}}
	if c.store != nil {
		var resp rpc.Response
		if err := c.call(ctx, &req, &resp); err != nil {
			return err
		}
		if err := c.store.GetFloats(ctx, WeightsKey+c.suffix, dst); err != nil {
			return fmt.Errorf("ps: getting the final center weights from %s: %w", WeightsKey+c.suffix, err)
		}
		c.version.Store(resp.Ints[0])
		return nil
	}
	resp := rpc.Response{Data: dst[:0]}
	if err := c.call(ctx, &req, &resp); err != nil {
		return err
	}
	return c.landed(resp.Data, dst)
}

func (c *Client) checkLen(what string, n int) error {
	if n != c.n {
		return fmt.Errorf("ps: %s of %d values for server %s, which holds %d", what, n, c.rpc.Addr(), c.n)
	}
	return nil
}

func (c *Client) call(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
	c.beat.busy.Add(1)
	err := c.rpc.Call(ctx, req, resp)
	c.beat.done()
	if err != nil {
		return fmt.Errorf("ps: %w", err)
	}
	return nil
}

// Join implements center.Center.
func (c *Client) Join(ctx context.Context, w int) (int, error) {
	var resp rpc.Response
	if err := c.call(ctx, &rpc.Request{Op: opJoin, Ints: [rpc.NumInts]int64{int64(w), int64(c.workers)}, Text: c.run}, &resp); err != nil {
		return 0, err
	}
	return int(resp.Ints[0]), nil
}

// Pull implements center.Center. In blob store mode it asks the server
// for the current version and gets the weights from the store.
//
// An observer's pull (center.Observer: a snapshot of the center) whose
// connection has failed, as a call cut short by Ctrl-C leaves it, tries
// once more over a fresh connection, so that an interrupted worker can
// still snapshot the center rather than its own replica.
func (c *Client) Pull(ctx context.Context, w int, dst []float32) error {
	if err := c.checkLen("pull into a buffer", len(dst)); err != nil {
		return err
	}
	err := c.pull(ctx, c.rpc, w, dst)
	if err == nil || w != center.Observer || ctx.Err() != nil || isRemote(err) {
		return err
	}
	rc, derr := rpc.Dial(ctx, c.addr, c.rcfg)
	if derr != nil {
		return fmt.Errorf("%w; and over a fresh connection: %w", err, derr)
	}
	defer rc.Close()
	return c.pull(ctx, rc, w, dst)
}

// pull is Pull over the connection rc.
func (c *Client) pull(ctx context.Context, rc *rpc.Client, w int, dst []float32) error {
	req := rpc.Request{Op: opPull, Ints: [rpc.NumInts]int64{int64(w)}}
	if c.store != nil {
		req.Op = opVersion
		var resp rpc.Response
		if err := c.callOn(ctx, rc, &req, &resp); err != nil {
			return err
		}
		if err := c.store.GetFloats(ctx, WeightsKey+c.suffix, dst); err != nil {
			return fmt.Errorf("ps: getting the center weights from %s: %w", WeightsKey+c.suffix, err)
		}
		c.version.Store(resp.Ints[0])
		return nil
	}
	resp := rpc.Response{Data: dst[:0]}
	if err := c.callOn(ctx, rc, &req, &resp); err != nil {
		return err
	}
	return c.landed(resp.Data, dst)
}

// isRemote reports whether err is the server's answer (the connection
// is fine) rather than the connection's failure.
func isRemote(err error) bool {
	var re *rpc.RemoteError
	return errors.As(err, &re)
}

// callOn is call over rc, the client's own connection or another.
func (c *Client) callOn(ctx context.Context, rc *rpc.Client, req *rpc.Request, resp *rpc.Response) error {
	if rc == c.rpc {
		return c.call(ctx, req, resp)
	}
	if err := rc.Call(ctx, req, resp); err != nil {
		return fmt.Errorf("ps: %w", err)
	}
	return nil
}

// landed checks that a response payload arrived in dst, whole.
func (c *Client) landed(got, dst []float32) error {
	if len(got) != len(dst) || (len(dst) > 0 && &got[0] != &dst[0]) {
		return fmt.Errorf("ps: server %s answered %d values, expected %d", c.rpc.Addr(), len(got), len(dst))
	}
	return nil
}

// Push implements center.Center. In blob store mode the delta goes
// through the store under DeltaKey(w).
func (c *Client) Push(ctx context.Context, w int, delta []float32) error {
	if err := c.checkLen("push of a delta", len(delta)); err != nil {
		return err
	}
	req := rpc.Request{Op: opPush, Ints: [rpc.NumInts]int64{int64(w)}, Data: delta}
	if c.store != nil {
		key := DeltaKey(w) + c.suffix
		if err := c.store.PutFloats(ctx, key, delta); err != nil {
			return fmt.Errorf("ps: putting worker %d's delta under %s: %w", w, key, err)
		}
		req = rpc.Request{Op: opPushKey, Ints: req.Ints, Text: key}
	}
	var resp rpc.Response
	return c.call(ctx, &req, &resp)
}

// Elastic implements center.Center: x travels to the server and comes
// back updated.
func (c *Client) Elastic(ctx context.Context, w int, x []float32, alpha float32) error {
	if err := c.checkLen("elastic exchange of weights", len(x)); err != nil {
		return err
	}
	req := rpc.Request{Op: opElastic, Ints: [rpc.NumInts]int64{int64(w)}, Floats: [rpc.NumFloats]float64{float64(alpha)}, Data: x}
	if c.store != nil {
		// SpeeDO: the weights travel through the store both ways; the
		// request only names them.
		key := ExchangeKey(w) + c.suffix
		if err := c.store.PutFloats(ctx, key, x); err != nil {
			return fmt.Errorf("ps: putting worker %d's weights under %s: %w", w, key, err)
		}
		req = rpc.Request{Op: opElasticKey, Ints: req.Ints, Floats: req.Floats, Text: key}
		var resp rpc.Response
		if err := c.call(ctx, &req, &resp); err != nil {
			return err
		}
		if err := c.store.GetFloats(ctx, key, x); err != nil {
			return fmt.Errorf("ps: getting worker %d's exchanged weights from %s: %w", w, key, err)
		}
		return nil
	}
	resp := rpc.Response{Data: x[:0]}
	if err := c.call(ctx, &req, &resp); err != nil {
		return err
	}
	return c.landed(resp.Data, x)
}

// Round implements center.Center.
func (c *Client) Round(ctx context.Context, w, iter int, grads []float32) (int, bool, error) {
	if err := c.checkLen("round of gradients", len(grads)); err != nil {
		return 0, false, err
	}
	var resp rpc.Response
	req := rpc.Request{Op: opRound, Ints: [rpc.NumInts]int64{int64(w), int64(iter)}, Data: grads}
	if c.store != nil {
		key := GradsKey(w) + c.suffix
		if err := c.store.PutFloats(ctx, key, grads); err != nil {
			return 0, false, fmt.Errorf("ps: putting worker %d's gradients under %s: %w", w, key, err)
		}
		req = rpc.Request{Op: opRoundKey, Ints: req.Ints, Text: key}
	}
	if err := c.call(ctx, &req, &resp); err != nil {
		return 0, false, err
	}
	return int(resp.Ints[0]), resp.Ints[1] != 0, nil
}

// Clock implements center.Center.
func (c *Client) Clock(ctx context.Context, w, iter, s int) (bool, error) {
	var resp rpc.Response
	if err := c.call(ctx, &rpc.Request{Op: opClock, Ints: [rpc.NumInts]int64{int64(w), int64(iter), int64(s)}}, &resp); err != nil {
		return false, err
	}
	return resp.Ints[0] != 0, nil
}

// Leave implements center.Center; the cause travels as its message.
func (c *Client) Leave(ctx context.Context, w int, cause error) error {
	req := rpc.Request{Op: opLeave, Ints: [rpc.NumInts]int64{int64(w)}}
	if cause != nil {
		req.Text = cause.Error()
		if req.Text == "" {
			req.Text = "worker failed"
		}
		if len(req.Text) > rpc.MaxText {
			req.Text = req.Text[:rpc.MaxText]
		}
	}
	var resp rpc.Response
	return c.call(ctx, &req, &resp)
}
