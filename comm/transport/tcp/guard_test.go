package tcp

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"dsgd/comm/wire"
)

// emfileStream's listeners fail their first n Accepts with EMFILE.
type emfileStream struct {
	StreamLayer
	n atomic.Int32
}

type emfileListener struct {
	net.Listener
	s *emfileStream
}

func (s *emfileStream) Listen(addr string) (net.Listener, error) {
	ln, err := s.StreamLayer.Listen(addr)
	return emfileListener{ln, s}, err
}

func (l emfileListener) Accept() (net.Conn, error) {
	if l.s.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestRendezvousSurvivesEMFILE: accept errors at rank 0 (out of file
// descriptors) delay the rendezvous; they do not end it.
func TestRendezvousSurvivesEMFILE(t *testing.T) {
	cfgs := groupConfigs(t, 3, CompressNone)
	es := &emfileStream{StreamLayer: cfgs[0].Stream}
	es.n.Store(6)
	cfgs[0].Stream = es
	for i := range cfgs {
		cfgs[i].Timeout = 10 * time.Second
	}
	eps, errs := connectAll(context.Background(), cfgs)
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	for _, ep := range eps {
		if ep != nil {
			ep.Close()
		}
	}
}

// TestRendezvousHostileStrangers: strangers that announce huge frames or hold
// sockets open in silence neither cost rank 0 their announced size nor
// stop the group from forming.
func TestRendezvousHostileStrangers(t *testing.T) {
	cfgs := groupConfigs(t, 3, CompressNone)
	for i := range cfgs {
		cfgs[i].Timeout = 20 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		errs []error
	}
	done := make(chan result, 1)
	// Rank 0 first, alone, so the strangers come before the ranks.
	go func() {
		eps, errs := connectAll(ctx, cfgs[:1])
		for _, ep := range eps {
			if ep != nil {
				defer ep.Close()
			}
		}
		done <- result{errs}
	}()
	var strangers []net.Conn
	defer func() {
		for _, c := range strangers {
			c.Close()
		}
	}()
	dialStranger := func() net.Conn {
		for range 200 {
			if c, err := net.Dial("tcp", cfgs[0].Rendezvous); err == nil {
				strangers = append(strangers, c)
				return c
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("rank 0 never listened")
		return nil
	}
	// One announces a 16 MiB hello: it is closed at once.
	big := dialStranger()
	big.Write(wire.AppendHeader(nil, wire.Header{Kind: wire.KindControl, Len: 16 << 20}))
	big.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := big.Read(make([]byte, 1)); err == nil {
		t.Error("rank 0 answered a 16 MiB hello")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("rank 0 kept waiting for a 16 MiB hello instead of refusing it")
	}
	// 200 say nothing.
	for range 200 {
		dialStranger()
	}
	eps, errs := connectAll(ctx, cfgs[1:])
	for _, ep := range eps {
		if ep != nil {
			defer ep.Close()
		}
	}
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r+1, err)
		}
	}
	if res := <-done; res.errs[0] != nil {
		t.Errorf("rank 0: %v", res.errs[0])
	}
}

// TestTokenNeededOffLoopback: a group listening beyond loopback must have
// a token.
func TestTokenNeededOffLoopback(t *testing.T) {
	for _, c := range []Config{
		{Rank: 0, Size: 2, Rendezvous: "0.0.0.0:1", Listen: "127.0.0.1:0"},
		{Rank: 1, Size: 2, Rendezvous: "127.0.0.1:1", Listen: "0.0.0.0:0"},
	} {
		if err := c.validate(); err == nil {
			t.Errorf("%+v without a token: accepted", c)
		}
		c.Token = "t"
		if err := c.validate(); err != nil {
			t.Errorf("%+v with a token: %v", c, err)
		}
	}
	c := Config{Rank: 1, Size: 2, Rendezvous: "10.1.1.1:1"} // joins a remote rank 0, listens on loopback
	if err := c.validate(); err != nil {
		t.Errorf("loopback listener without a token: %v", err)
	}
}
