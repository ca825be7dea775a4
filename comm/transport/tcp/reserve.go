package tcp

import (
	"net"
	"sync"
)

// Reserved is a StreamLayer for a group whose ranks run in one process
// (tests, calibration): the rendezvous listener is opened in advance by
// Reserve and handed to rank 0's Listen, so the rendezvous address is
// known before Connect without picking a free port, closing it and
// binding it again (another socket can take it in between). Every other
// address is listened on and dialled as TCP does.
type Reserved struct {
	TCP
	addr string
	mu   sync.Mutex
	ln   net.Listener // until rank 0 takes it
}

// Reserve listens on addr (host:port, port 0 for any free port) for a
// group's rendezvous. Give every rank Config{Rendezvous: r.Addr(),
// Stream: r}; call Close when done, in case rank 0 never took it.
func Reserve(addr string) (*Reserved, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Reserved{addr: ln.Addr().String(), ln: ln}, nil
}

// Addr is the reserved listener's address (host:port).
func (r *Reserved) Addr() string { return r.addr }

// Listen returns the reserved listener the first time it is asked for
// Addr, and a new TCP listener otherwise.
func (r *Reserved) Listen(addr string) (net.Listener, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if addr == r.addr && r.ln != nil {
		ln := r.ln
		r.ln = nil
		return tcpListener{ln, r.TCP}, nil
	}
	return r.TCP.Listen(addr)
}

// Close closes the reserved listener if rank 0 has not taken it (the
// one who took it closes it).
func (r *Reserved) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return nil
	}
	err := r.ln.Close()
	r.ln = nil
	return err
}
