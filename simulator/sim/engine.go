package sim

import (
	"container/heap"
	"fmt"
)

// engine is the event queue: callbacks ordered by virtual time (seconds),
// ties by the order they were scheduled, so a run is deterministic.
type engine struct {
	now float64
	seq uint64
	q   queue
}

type item struct {
	t   float64
	seq uint64
	fn  func()
}

type queue []item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].t != q[j].t {
		return q[i].t < q[j].t
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = item{}
	*q = old[:len(old)-1]
	return it
}

// at schedules fn at time t (never before now).
func (e *engine) at(t float64, fn func()) {
	if t < e.now {
		t = e.now
	}
	e.seq++
	heap.Push(&e.q, item{t: t, seq: e.seq, fn: fn})
}

// run processes events until none are left or stop reports true.
func (e *engine) run(stop func() bool) {
	for len(e.q) > 0 && !stop() {
		it := heap.Pop(&e.q).(item)
		e.now = it.t
		it.fn()
	}
}

// network is the links of every node (ranks, then the center server):
// one NIC-out and one NIC-in per node, each carrying one message at a
// time. A message of m bytes from a to b issued at t starts at the first
// time both a's out-link and b's in-link are free (reservations are made
// in issue order, first come first served), holds both for Beta·m and
// arrives Alpha after it leaves; a message of at most smallMsg bytes
// interleaves with the others and takes Alpha + Beta·m from its issue.
// Messages between a pair keep their order.
type network struct {
	eng      *engine
	nw       Network
	out, in  []float64 // when each node's out- and in-link is next free
	bytes    int64     // bytes sent, all nodes
	msgs     int64
	boxes    map[int64]*box
	nodes    int64
	mismatch error
}

func newNetwork(eng *engine, nw Network, nodes int) *network {
	return &network{eng: eng, nw: nw, out: make([]float64, nodes), in: make([]float64, nodes),
		boxes: map[int64]*box{}, nodes: int64(nodes)}
}

// smallMsg is the largest message that does not queue for a link (the
// center's control requests and replies are 64 bytes).
const smallMsg = 4096

// reserve books the links for a message and returns when it has left the
// sender (its send is complete) and when it arrives.
func (n *network) reserve(from, to int, bytes int64, t float64) (sent, arrive float64) {
	if bytes <= smallMsg {
		// A control message is a packet or two: on a real link it slips
		// between the packets of the bulk transfers in flight instead of
		// queueing behind them, so it neither waits for nor holds a link.
		sent = t + n.nw.Beta*float64(bytes)
		n.bytes += bytes
		n.msgs++
		return sent, sent + n.nw.Alpha
	}
	start := max(t, n.out[from], n.in[to])
	sent = start + n.nw.Beta*float64(bytes)
	n.out[from], n.in[to] = sent, sent
	n.bytes += bytes
	n.msgs++
	return sent, sent + n.nw.Alpha
}

// box holds the messages from one node to another that have been sent
// but not yet received, and the receive waiting for the next one.
type box struct {
	msgs   []msg
	head   int
	waiter func(t float64, data []float32)
	wtag   uint32
}

// msg is a message in a mailbox: its tag, arrival and, in exact mode,
// the data as it was when sent (nil otherwise).
type msg struct {
	tag    uint32
	arrive float64
	data   []float32
}

func (n *network) key(from, to int) int64 { return int64(from)*n.nodes + int64(to) }

// send sends a tagged message into from→to's mailbox and returns when the
// send completes; data (nil but in exact mode) travels with it to the
// receive.
func (n *network) send(from, to int, tag uint32, bytes int64, t float64, data []float32) float64 {
	sent, arrive := n.reserve(from, to, bytes, t)
	k := n.key(from, to)
	b := n.boxes[k]
	if b == nil {
		b = &box{}
		n.boxes[k] = b
	}
	if w := b.waiter; w != nil && b.head == len(b.msgs) {
		b.waiter = nil
		n.checkTag(from, to, b.wtag, tag)
		delete(n.boxes, k)
		n.eng.at(arrive, func() { w(arrive, data) })
		return sent
	}
	b.msgs = append(b.msgs, msg{tag, arrive, data})
	return sent
}

// recv waits, from time t, for the next message from→to and calls done
// (from an event) at the time it is received, its arrival or t if it had
// already arrived, with the message's data.
func (n *network) recv(from, to int, tag uint32, t float64, done func(t float64, data []float32)) {
	k := n.key(from, to)
	b := n.boxes[k]
	if b == nil || b.head == len(b.msgs) {
		if b == nil {
			b = &box{}
			n.boxes[k] = b
		}
		if b.waiter != nil {
			panic(fmt.Sprintf("sim: two receives from %d at %d", from, to))
		}
		b.waiter, b.wtag = done, tag
		return
	}
	m := b.msgs[b.head]
	b.msgs[b.head] = msg{}
	b.head++
	if b.head == len(b.msgs) {
		delete(n.boxes, k)
	}
	n.checkTag(from, to, tag, m.tag)
	at := max(t, m.arrive)
	n.eng.at(at, func() { done(at, m.data) })
}

func (n *network) checkTag(from, to int, want, got uint32) {
	if want != got && n.mismatch == nil {
		n.mismatch = fmt.Errorf("sim: node %d expected tag %#x from %d, got %#x (the ranks' communication is out of step)", to, want, from, got)
	}
}
