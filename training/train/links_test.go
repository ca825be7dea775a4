package train

import (
	"context"
	"errors"
	"testing"

	"dsgd/comm/transport"
	"dsgd/protocol/center"
)

// TestConnect: a multi-process rank gets the center alone when its
// scheme's workers talk only to it (for every worker), the center (for
// the group's roots) and the group's endpoint under hybrid, neither for
// an elastic member (each generation connects its own), else the
// endpoint with the trainer's layout hash; done closes what was
// connected, and is set when a connection fails.
func TestConnect(t *testing.T) {
	for _, tc := range []struct {
		name          string
		elastic       bool
		centerWorkers int // 0: no center
		endpoint      bool
	}{
		{name: "async", centerWorkers: 2},
		{name: "hybrid", centerWorkers: 2, endpoint: true},
		{name: "sync-ring", endpoint: true},
		{name: "sync-ring", elastic: true},
	} {
		cfg := asyncConfig(tc.name, 2, 1)
		cfg.WorkerFeeds = nil
		cfg.Group = &Group{Rank: 0, Size: 2}
		tr, err := New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var dialled []int
		var hashes []uint64
		closed := 0
		eps := transport.NewInproc(1)
		l := Links{
			Center: func(_ context.Context, workers int) (center.Center, func(), error) {
				dialled = append(dialled, workers)
				return &center.Local{}, func() { closed++ }, nil
			},
			Endpoint: func(_ context.Context, hash uint64) (transport.Endpoint, error) {
				hashes = append(hashes, hash)
				return eps[0], nil
			},
		}
		if tc.elastic {
			l.Elastic = &Elastic{}
		}
		deps, done, err := Connect(context.Background(), tr, l)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (tc.centerWorkers > 0) != (deps.Center != nil) || (tc.centerWorkers > 0 && (len(dialled) != 1 || dialled[0] != tc.centerWorkers)) {
			t.Errorf("%s: center %v dialled for %v workers, want %d", tc.name, deps.Center, dialled, tc.centerWorkers)
		}
		if tc.endpoint != (deps.Endpoint != nil) || (tc.endpoint && (len(hashes) != 1 || hashes[0] != tr.LayoutHash())) {
			t.Errorf("%s: endpoint %v connected with %v, want one with the layout hash: %v", tc.name, deps.Endpoint, hashes, tc.endpoint)
		}
		if tc.elastic != (deps.Elastic != nil) {
			t.Errorf("%s: Deps.Elastic %v", tc.name, deps.Elastic)
		}
		done()
		if want := min(len(dialled), 1); closed != want {
			t.Errorf("%s: the center closed %d times, want %d", tc.name, closed, want)
		}
	}
	cfg := asyncConfig("sync-ring", 2, 1)
	cfg.WorkerFeeds, cfg.Group = nil, &Group{Rank: 0, Size: 2}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	_, done, err := Connect(context.Background(), tr, Links{Endpoint: func(context.Context, uint64) (transport.Endpoint, error) { return nil, refused }})
	if !errors.Is(err, refused) || done == nil {
		t.Fatalf("a failed endpoint: %v, done %v", err, done != nil)
	}
	done()
}
