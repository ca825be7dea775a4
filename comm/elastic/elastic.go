package elastic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"dsgd/comm/rpc"
	"dsgd/comm/transport"
	"dsgd/comm/transport/tcp"
)

// The operations of the coordinator's protocol.
const (
	opNext  = 1 // Ints: generation, done; Text: address "\n" why
	opCheck = 2 // Ints: generation, iteration; answer Ints[0] = 1: re-form
	opLeave = 3 // the member finished the run: its going is no loss
)

// maxAddr bounds a member's address and reason in a Next.
const maxAddr = 4096

// Config configures a Coordinator.
type Config struct {
	// Min and Max bound the group's size: fewer than Min members ends the
	// run, and joiners beyond Max wait for a place.
	Min, Max int
	// Want is the size of the first generation: the coordinator waits
	// for that many workers (or, after Timeout, for at least Min).
	Want int
	// Server says the group has a server rank (sync-ps's parameter
	// server): one member that calls Next as the server, always the
	// last rank, whose state every generation starts from and whose
	// loss ends the run. Min, Max and Want count the workers alone.
	Server bool
	// Token is the secret every member presents (rpc.Config.Token).
	Token string
	// Timeout bounds how long a re-forming generation waits for a member
	// that neither calls Next nor goes away (a frozen process), and every
	// read and write of the protocol.
	Timeout time.Duration
	// Logf, when set, receives a line for every generation formed and
	// every member lost.
	Logf func(format string, args ...any)
}

func (c *Config) validate() error {
	switch {
	case c.Min < 1 || c.Max < c.Min:
		return fmt.Errorf("elastic: bounds %d:%d, want 1 <= MIN <= MAX", c.Min, c.Max)
	case c.Want < c.Min || c.Want > c.Max:
		return fmt.Errorf("elastic: %d workers to start with, outside %d:%d", c.Want, c.Min, c.Max)
	case c.Timeout <= 0:
		return fmt.Errorf("elastic: timeout %v, want a positive duration", c.Timeout)
	}
	return nil
}

// Place is a worker's place in a generation.
type Place struct {
	// Gen numbers the generation, from 1.
	Gen int
	// Rank and Size are the worker's rank and the generation's size.
	Rank, Size int
	// Rendezvous is the address rank 0 gathers the generation at: the
	// one it gave in its Next.
	Rendezvous string
	// Done is the iterations the source has completed: where the
	// generation starts.
	Done int
	// Source is the rank whose state the others adopt: 0, the survivor
	// that completed the most iterations, or the server.
	Source int
}

// member is one worker's connection.
type member struct {
	key   any // its *rpc.Conn (a name in the scripts)
	seq   int // arrival order
	addr  string
	gen   int // the generation it is in; 0: none
	rank  int
	done  int
	alive bool
	left  bool // said it finished the run (Leave)
	// prefer is the rank it asks for in the first generation (-1: none).
	prefer int
	server bool // the group's server rank (Config.Server)
	// wait, while the member's Next waits, receives its place or why
	// there is none.
	wait chan result
}

type result struct {
	place Place
	err   error
}

// Coordinator serves the membership of one elastic group.
type Coordinator struct {
	cfg Config
	srv *rpc.Server

	mu      sync.Mutex
	members map[any]*member
	seq     int
	gen     int
	current []*member // the generation's members, by rank
	// decided holds each iteration's answer to Check in this generation.
	decided map[int]bool
	broken  bool // a member of the generation went away
	forming bool
	// timer stops the armed timeout (nil: none armed); after arms one
	// (time.AfterFunc; the scripts fire theirs by hand).
	timer   func() bool
	after   func(time.Duration, func()) func() bool
	armed   int  // numbers the timeouts armed: a stale one does nothing
	started bool // the first generation's wait began (its timer runs)
	over    bool // the group could not go on (fail)
	failure string
	// finished is closed once the group has run and every member's
	// connection has ended.
	finished chan struct{}
	closed   bool
}

// Listen listens on addr (loopback when its host is empty) and returns a
// Coordinator that serves once Serve runs.
func Listen(addr string, cfg Config) (*Coordinator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, members: map[any]*member{}, decided: map[int]bool{}, after: afterFunc, finished: make(chan struct{})}
	srv, err := rpc.Listen(addr, rpc.Config{Token: cfg.Token, Timeout: cfg.Timeout, MaxFrame: 1 << 16,
		// A member calls at every iteration boundary it may re-form at;
		// between those it tests or computes for as long as that takes.
		IdleTimeout: 24 * time.Hour}, c.handle)
	if err != nil {
		return nil, fmt.Errorf("elastic: %w", err)
	}
	c.srv = srv
	return c, nil
}

// Addr is the address the coordinator listens on.
func (c *Coordinator) Addr() string { return c.srv.Addr() }

// Serve serves until ctx ends or Close is called.
func (c *Coordinator) Serve(ctx context.Context) error { return c.srv.Serve(ctx) }

// Close stops the coordinator; members waiting in Next get an error.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	for _, m := range c.members {
		c.reply(m, result{err: errors.New("the elastic coordinator stopped")})
	}
	if c.timer != nil {
		c.timer()
	}
	c.mu.Unlock()
	return c.srv.Close()
}

// Run serves until the group has finished (Finished) or ctx ends: a
// coordinator of its own, as dsgd elastic-coordinator runs it. Its error
// says why the group could not go on (Failure), else it is ctx's.
func (c *Coordinator) Run(ctx context.Context) error {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- c.Serve(sctx) }()
	select {
	case <-c.Finished():
	case <-ctx.Done():
	}
	stop()
	<-served
	if f := c.Failure(); f != "" {
		return fmt.Errorf("the elastic group could not go on: %s", f)
	}
	return ctx.Err()
}

// Finished is closed once the group has run (or failed) and every
// member's connection has ended: a coordinator of its own may stop.
func (c *Coordinator) Finished() <-chan struct{} { return c.finished }

// Failure is why the group could not go on, or "" when it did.
func (c *Coordinator) Failure() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}

// Gen is the number of generations formed so far.
func (c *Coordinator) Gen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

func (c *Coordinator) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(format, args...)
	}
}

func (c *Coordinator) handle(ctx context.Context, req *rpc.Request, resp *rpc.Response) error {
	conn := rpc.ConnFrom(ctx)
	c.mu.Lock()
	m, fresh := c.member(conn)
	if fresh {
		conn.OnClose(func() { c.gone(m) })
	}
	switch req.Op {
	case opLeave:
		m.left = true
		c.mu.Unlock()
		return nil
	case opCheck:
		reform := c.check(m, int(req.Ints[0]), int(req.Ints[1]))
		c.mu.Unlock()
		if reform {
			resp.Ints[0] = 1
		}
		return nil
	case opNext:
		if len(req.Text) > maxAddr {
			c.mu.Unlock()
			return fmt.Errorf("elastic: a Next of %d bytes, limit %d", len(req.Text), maxAddr)
		}
		addr, why, _ := strings.Cut(req.Text, "\n")
		ch, err := c.next(m, int(req.Ints[0]), int(req.Ints[1]), int(req.Ints[2]), req.Ints[3] == 1, addr, why)
		c.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case r := <-ch:
			if r.err != nil {
				return r.err
			}
			resp.Ints = [rpc.NumInts]int64{int64(r.place.Gen), int64(r.place.Rank), int64(r.place.Size), int64(r.place.Done)}
			resp.Floats[0] = float64(r.place.Source)
			resp.Text = r.place.Rendezvous
			return nil
		case <-ctx.Done():
			// The member died waiting (a keep-alive failed), or the
			// coordinator stops: it takes no place.
			c.mu.Lock()
			if m.wait == ch {
				m.wait, m.alive = nil, false
				c.tryForm()
			}
			c.mu.Unlock()
			return ctx.Err()
		}
	}
	c.mu.Unlock()
	return fmt.Errorf("elastic: unknown operation %d", req.Op)
}

// member returns key's member, making it (fresh) on its first call.
// c.mu must be held.
func (c *Coordinator) member(key any) (m *member, fresh bool) {
	if m = c.members[key]; m != nil {
		return m, false
	}
	c.seq++
	m = &member{key: key, seq: c.seq, alive: true}
	c.members[key] = m
	return m, true
}

// next records m's Next (in generation gen, having completed done
// iterations, asking for rank prefer, as the server or not, offering
// addr) and returns the channel its place will come on. c.mu must be
// held.
func (c *Coordinator) next(m *member, gen, done, prefer int, server bool, addr, why string) (chan result, error) {
	if addr == "" {
		return nil, errors.New("elastic: a Next without the member's address")
	}
	if m.wait != nil {
		return nil, errors.New("elastic: a second Next while the first waits")
	}
	if server {
		if !c.cfg.Server {
			return nil, errors.New("elastic: a member says it is the server, but the group has none (only sync-ps has one)")
		}
		for _, o := range c.members {
			if o != m && o.alive && o.server {
				return nil, errors.New("elastic: a second server: the group has one")
			}
		}
		m.server = true
	}
	m.addr, m.done, m.prefer = addr, done, prefer
	if m.gen != c.gen || gen != c.gen || c.gen == 0 {
		m.gen = 0 // a joiner (or a member dropped from its generation)
	}
	ch := make(chan result, 1)
	m.wait = ch
	if m.gen == c.gen && c.gen > 0 && !c.forming {
		// The first to report says why the generation ends.
		if why != "" {
			c.logf("elastic: generation %d re-forms: rank %d reports: %s", c.gen, m.rank, why)
		}
		c.reform()
	}
	c.tryForm()
	return ch, nil
}

// check answers a member's Check of iteration iter in generation gen.
func (c *Coordinator) check(m *member, gen, iter int) bool {
	if gen != c.gen || m.gen != c.gen || c.forming {
		return true
	}
	d, ok := c.decided[iter]
	if !ok {
		d = c.broken || (c.joiners() > 0 && workers(c.current) < c.cfg.Max)
		c.decided[iter] = d
	}
	return d
}

// joiners counts the workers waiting to enter a generation (the server
// is not one).
func (c *Coordinator) joiners() int {
	n := 0
	for _, m := range c.members {
		if m.alive && m.wait != nil && m.gen == 0 && !m.server {
			n++
		}
	}
	return n
}

// workers counts the members of ms that are not the server.
func workers(ms []*member) int {
	n := 0
	for _, m := range ms {
		if !m.server {
			n++
		}
	}
	return n
}

// workersText is "1 worker" or "N workers".
func workersText(n int) string {
	if n == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", n)
}

// waitingServer is the server waiting in Next, or nil.
func (c *Coordinator) waitingServer() *member {
	for _, m := range c.members {
		if m.alive && m.wait != nil && m.server {
			return m
		}
	}
	return nil
}

// gone records that m's connection ended.
func (c *Coordinator) gone(m *member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.goneLocked(m)
}

func (c *Coordinator) goneLocked(m *member) {
	m.alive = false
	delete(c.members, m.key)
	if m.gen == c.gen && c.gen > 0 && !m.left && !c.over {
		c.logf("elastic: rank %d of generation %d is gone (its connection to the coordinator ended)", m.rank, c.gen)
		c.broken = true
	}
	if c.gen > 0 && !c.over && !slices.ContainsFunc(c.current, func(m *member) bool { return m.alive }) {
		// The whole generation is gone: no one holds the weights, and
		// no one will check for joiners again.
		switch finished := !slices.ContainsFunc(c.current, func(m *member) bool { return !m.left }); {
		case finished && c.joiners() == 0:
			c.over = true // the run's end: no one to tell
		case finished:
			c.fail("the group finished its run: there is nothing left to join")
		default:
			c.fail("every member of the group is gone: no worker holds the weights to go on from")
		}
	}
	c.tryForm()
	if (c.gen > 0 || c.over) && len(c.members) == 0 && !c.closed && c.finished != nil {
		c.closed = true
		close(c.finished)
	}
}

// Waiting is the number of workers waiting to join the group.
func (c *Coordinator) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.joiners()
}

// reform starts re-forming the current generation: members have until
// Timeout to call Next.
func (c *Coordinator) reform() {
	c.forming = true
	c.armTimer()
}

func (c *Coordinator) armTimer() {
	if c.timer != nil {
		c.timer()
	}
	c.armed++
	id := c.armed
	c.timer = c.after(c.cfg.Timeout, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if id != c.armed || c.timer == nil {
			return // stopped or replaced as it fired
		}
		c.timer = nil
		c.tryFormBy(true)
	})
}

// afterFunc is time.AfterFunc, returning the timer's Stop.
func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

func (c *Coordinator) tryForm() { c.tryFormBy(false) }

// tryFormBy forms the next generation when it can: the first once Want
// workers wait (or, late, Min), a later one once every member of the
// current generation has called Next or gone (or, late, without those
// that did neither).
func (c *Coordinator) tryFormBy(late bool) {
	var ready []*member // survivors of the current generation, the server aside
	var server *member  // the server, when the group has one
	if c.gen == 0 {
		if !c.started && (c.joiners() > 0 || c.waitingServer() != nil) {
			c.started = true
			c.armTimer()
		}
		n := c.joiners()
		server = c.waitingServer()
		if n < c.cfg.Want && !(late && n >= c.cfg.Min) || c.cfg.Server && server == nil {
			switch {
			case late && c.cfg.Server && server == nil:
				c.fail(fmt.Sprintf("the server did not come within %v", c.cfg.Timeout))
			case late && n > 0 && n < c.cfg.Min:
				c.fail(fmt.Sprintf("only %d of the %d workers came within %v, fewer than the minimum %d", n, c.cfg.Want, c.cfg.Timeout, c.cfg.Min))
			}
			return
		}
	} else {
		if !c.forming {
			return
		}
		for _, m := range c.current {
			switch {
			case m.server && !m.alive:
				c.fail(fmt.Sprintf("the server (rank %d of generation %d) is gone: the group cannot go on without it", m.rank, c.gen))
				return
			case m.alive && m.wait != nil && m.gen == c.gen && m.server:
				server = m
			case m.alive && m.wait != nil && m.gen == c.gen:
				ready = append(ready, m)
			case m.alive && !late:
				return // still training, or still to notice
			case m.server:
				c.fail(fmt.Sprintf("the server (rank %d of generation %d) did not answer within %v: the group cannot go on without it", m.rank, c.gen, c.cfg.Timeout))
				return
			case m.alive:
				c.logf("elastic: rank %d of generation %d did not answer within %v: left out", m.rank, c.gen, c.cfg.Timeout)
			}
		}
	}
	// Rank 0 is the survivor that completed the most iterations.
	slices.SortStableFunc(ready, func(a, b *member) int { return cmp.Compare(b.done, a.done) })
	var joiners []*member
	for _, m := range c.members {
		if m.alive && m.wait != nil && m.gen == 0 && !m.server {
			joiners = append(joiners, m)
		}
	}
	slices.SortFunc(joiners, func(a, b *member) int {
		if c.gen == 0 {
			// The first generation keeps the launcher's numbering.
			if d := cmp.Compare(preferKey(a), preferKey(b)); d != 0 {
				return d
			}
		}
		return cmp.Compare(a.seq, b.seq)
	})
	next := append(ready, joiners[:min(len(joiners), max(0, c.cfg.Max-len(ready)))]...)
	if len(next) < c.cfg.Min {
		c.fail(fmt.Sprintf("%s left, fewer than the minimum %d (--elastic %d:%d)", workersText(len(next)), c.cfg.Min, c.cfg.Min, c.cfg.Max))
		return
	}
	if len(ready) == 0 && server == nil && c.gen > 0 {
		c.fail("every member of the group is gone: no worker holds the weights to go on from")
		return
	}
	if c.timer != nil {
		c.timer()
		c.timer = nil
	}
	c.gen++
	kept := len(ready)
	done, source := 0, 0
	if len(ready) > 0 {
		done = ready[0].done
	}
	if server != nil {
		// The server holds the model: the generation starts from it.
		next = append(next, server)
		done, source = server.done, len(next)-1
	}
	c.current = next
	c.decided = map[int]bool{}
	c.broken, c.forming = false, false
	what := ""
	if server != nil {
		what = " and the server"
	}
	c.logf("elastic: generation %d: %s%s (%d kept, %d joined), from iteration %d", c.gen, workersText(workers(next)), what, kept, workers(next)-kept, done)
	for r, m := range next {
		m.gen, m.rank = c.gen, r
		c.reply(m, result{place: Place{Gen: c.gen, Rank: r, Size: len(next), Rendezvous: next[0].addr, Done: done, Source: source}})
	}
}

// preferKey orders members by the rank they ask for, those asking for
// none last.
func preferKey(m *member) int {
	if m.prefer < 0 {
		return int(^uint(0) >> 1)
	}
	return m.prefer
}

// fail ends every waiting Next with why.
func (c *Coordinator) fail(why string) {
	c.logf("elastic: %s", why)
	c.over = true // the members leave now: no loss to report
	c.failure = why
	for _, m := range c.members {
		c.reply(m, result{err: errors.New(why)})
	}
	c.forming = false
}

// reply hands a waiting member its result.
func (c *Coordinator) reply(m *member, r result) {
	if m.wait != nil {
		m.wait <- r
		m.wait = nil
	}
}

// Client is a worker's connection to its coordinator.
type Client struct {
	rpc *rpc.Client
	gen int
}

// Dial connects to the coordinator at addr.
func Dial(ctx context.Context, addr, token string, timeout time.Duration) (*Client, error) {
	cl, err := rpc.Dial(ctx, addr, rpc.Config{Token: token, Timeout: timeout, MaxFrame: 1 << 16})
	if err != nil {
		return nil, fmt.Errorf("elastic coordinator: %w", err)
	}
	return &Client{rpc: cl}, nil
}

// Next reports this worker ready for the next generation, having
// completed done iterations, and offering addr for the generation's
// rendezvous should it be rank 0 (why says what ended its last
// generation, for the coordinator's log). It waits until the generation
// is formed.
func (c *Client) Next(ctx context.Context, done int, addr, why string) (Place, error) {
	return c.next(ctx, done, -1, false, addr, why)
}

// next is Next asking for rank prefer in a first generation, as the
// group's server or not.
func (c *Client) next(ctx context.Context, done, prefer int, server bool, addr, why string) (Place, error) {
	req := rpc.Request{Op: opNext, Ints: [rpc.NumInts]int64{int64(c.gen), int64(done), int64(prefer), 0}, Text: addr + "\n" + firstLine(why)}
	if server {
		req.Ints[3] = 1
	}
	var resp rpc.Response
	if err := c.rpc.Call(ctx, &req, &resp); err != nil {
		var re *rpc.RemoteError
		if errors.As(err, &re) {
			return Place{}, errors.New(re.Msg)
		}
		return Place{}, fmt.Errorf("elastic coordinator %s: %w", c.rpc.Addr(), err)
	}
	p := Place{Gen: int(resp.Ints[0]), Rank: int(resp.Ints[1]), Size: int(resp.Ints[2]), Done: int(resp.Ints[3]), Source: int(resp.Floats[0]), Rendezvous: resp.Text}
	if p.Size < 1 || p.Rank < 0 || p.Rank >= p.Size || p.Source < 0 || p.Source >= p.Size || p.Done < 0 {
		return Place{}, fmt.Errorf("elastic coordinator %s: a malformed place %+v", c.rpc.Addr(), p)
	}
	c.gen = p.Gen
	return p, nil
}

// Check asks whether the group stops to re-form after iteration iter (the
// number of iterations completed).
func (c *Client) Check(ctx context.Context, iter int) (bool, error) {
	req := rpc.Request{Op: opCheck, Ints: [rpc.NumInts]int64{int64(c.gen), int64(iter)}}
	var resp rpc.Response
	if err := c.rpc.Call(ctx, &req, &resp); err != nil {
		return false, fmt.Errorf("elastic coordinator %s: %w", c.rpc.Addr(), err)
	}
	return resp.Ints[0] == 1, nil
}

// Leave tells the coordinator that this worker finished the run, so that
// its going does not re-form the group.
func (c *Client) Leave(ctx context.Context) error {
	req := rpc.Request{Op: opLeave}
	var resp rpc.Response
	return c.rpc.Call(ctx, &req, &resp)
}

// Close closes the connection: the coordinator counts the worker gone
// (lost, unless it left).
func (c *Client) Close() error { return c.rpc.Close() }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 512 {
		s = s[:512]
	}
	return s
}

// Generation is a worker's place in one generation, connected.
type Generation struct {
	// Gen numbers the generation; Rank and Size place the worker in it.
	Gen, Rank, Size int
	// Done is the iterations the source has completed: where it starts.
	Done int
	// Source is the rank whose state the others adopt (Place.Source).
	Source int
	// Endpoint connects the generation's ranks.
	Endpoint transport.Endpoint
}

// Member is a worker's membership of an elastic group over the tcp
// transport: the coordinator's client, and each generation's endpoint.
type Member struct {
	// Client is the connection to the coordinator.
	Client *Client
	// TCP holds what every generation's tcp.Config shares (listen
	// address, token, model hash, timeout, wire encoding, shared
	// memory); Next fills the rank, size and rendezvous.
	TCP tcp.Config
	// Prefer is the rank the worker asks for in the first generation
	// (the launcher's numbering; -1 for none).
	Prefer int
	// Server makes this member the group's server rank (Config.Server).
	Server bool
}

// maxConnectTries bounds how many generations in a row a worker may fail
// to connect before it gives up.
const maxConnectTries = 8

// Next reports the worker ready for the next generation, having
// completed done iterations (why ended its last generation, nil for the
// first), and connects the generation it is placed in. A generation
// whose connection fails (a member died before it connected) is reported
// in turn, and the next one tried.
func (m *Member) Next(ctx context.Context, done int, why error) (Generation, error) {
	listen := cmp.Or(m.TCP.Listen, tcp.DefaultListen)
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return Generation{}, fmt.Errorf("elastic: listen address %q: %w", listen, err)
	}
	for try := 0; ; try++ {
		res, err := tcp.Reserve(net.JoinHostPort(host, "0"))
		if err != nil {
			return Generation{}, fmt.Errorf("elastic: reserving a rendezvous address on %s: %w", host, err)
		}
		text := ""
		if why != nil {
			text = why.Error()
		}
		p, err := m.Client.next(ctx, done, m.Prefer, m.Server, res.Addr(), text)
		m.Prefer = -1
		if err != nil {
			res.Close()
			return Generation{}, err
		}
		c := m.TCP
		c.Rank, c.Size, c.Rendezvous = p.Rank, p.Size, p.Rendezvous
		if p.Rank == 0 {
			c.Stream = res
		}
		ep, err := tcp.Connect(ctx, c)
		res.Close()
		if err == nil {
			return Generation{Gen: p.Gen, Rank: p.Rank, Size: p.Size, Done: p.Done, Source: p.Source, Endpoint: ep}, nil
		}
		if ctx.Err() != nil || try+1 >= maxConnectTries {
			return Generation{}, fmt.Errorf("elastic generation %d: rank %d of %d joining %s: %w", p.Gen, p.Rank, p.Size, p.Rendezvous, err)
		}
		why = fmt.Errorf("generation %d did not connect: %w", p.Gen, err)
	}
}

// Check asks the coordinator whether the group re-forms after iter.
func (m *Member) Check(ctx context.Context, iter int) (bool, error) {
	return m.Client.Check(ctx, iter)
}
