package train

import (
	"context"

	"dsgd/comm/transport"
	"dsgd/protocol/center"
	"dsgd/protocol/scheme"
)

// Links are how a rank of a multi-process group (Config.Group) reaches
// what its scheme talks to. The caller makes them: a center's client is
// a server's (package centernet, in the servers group, which train does
// not import), and the endpoint is the transport the caller chose.
type Links struct {
	// Center connects to the center, which serves the given number of
	// workers; the returned func closes the connection.
	Center func(ctx context.Context, workers int) (center.Center, func(), error)
	// Endpoint connects this rank to its group, offering the trainer's
	// layout hash (LayoutHash), which every rank must share.
	Endpoint func(ctx context.Context, hash uint64) (transport.Endpoint, error)
	// Elastic is an elastic group's membership (nil: none); each of its
	// generations connects its own endpoint.
	Elastic *Elastic
}

// Connect makes the Deps of t's run on a rank of a multi-process group
// from l: the center alone for a scheme whose workers talk only to it,
// the center (for the group's roots) and the group's endpoint for one
// that has both, the elastic membership, or the endpoint. done closes
// what it connected, the last first; it is set, and to be called, even
// when err is not nil.
func Connect(ctx context.Context, t *Trainer, l Links) (deps Deps, done func(), err error) {
	var closers []func()
	done = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	endpoint := func() error {
		ep, err := l.Endpoint(ctx, t.LayoutHash())
		if err != nil {
			return err
		}
		closers = append(closers, func() { ep.Close() })
		deps.Endpoint = ep
		return nil
	}
	centre := func(workers int) error {
		c, closer, err := l.Center(ctx, workers)
		if err != nil {
			return err
		}
		closers = append(closers, closer)
		deps.Center = c
		return nil
	}
	deps.Elastic = l.Elastic
	switch {
	case t.CenterOnly():
		err = centre(t.cfg.Workers)
	case t.cfg.Info().Center == scheme.GroupRoots:
		// The group's roots talk to the center; every rank to its group.
		if err = centre(t.CenterWorkers()); err == nil {
			err = endpoint()
		}
	case l.Elastic != nil:
		// Each generation connects its own endpoint (Elastic.Membership).
	default:
		err = endpoint()
	}
	return deps, done, err
}
