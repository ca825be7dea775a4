// Package netguard keeps a server's accept loop alive and its
// unauthenticated connections bounded, for every dsgd service that
// listens: the rpc servers (ps, smb) and the TCP transport's rendezvous.
//
// Accept retries the errors a client can cause or the machine can run
// into (EMFILE, ENFILE, ECONNABORTED, ...) with a capped exponential
// back-off instead of returning them, so a burst of connections that
// exhausts the file descriptors slows the server down for a moment and
// never ends it; only a closed listener ends the loop.
//
// Pending bounds the connections that have not yet authenticated: each
// gets a short deadline (HelloTimeout) and, when more than the limit
// wait at once, the oldest is closed to make room. A legitimate client
// says its hello at once, so it is never the oldest for long; a stranger
// holding sockets open costs the server a bounded number of them.
//
//	p := netguard.NewPending(netguard.DefaultPending)
//	for {
//		c, err := netguard.Accept(ln, logf)
//		if err != nil {
//			return // the listener was closed
//		}
//		p.Add(c) // may close the oldest waiting one
//		go func() {
//			c.SetReadDeadline(time.Now().Add(netguard.HelloTimeout))
//			ok := hello(c)
//			p.Done(c) // authenticated or refused: no longer pending
//			...
//		}()
//	}
package netguard
