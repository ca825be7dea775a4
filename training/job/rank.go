package job

import (
	"fmt"

	"dsgd/comm/transport/tcp"
	"dsgd/internal/launcher"
	"dsgd/protocol/scheme"
)

// A rank process of a multi-process run (dsgd worker, dsgd ps) places
// itself in two steps around reading its environment
// (launcher.Resolve): RankDefaults fills what its command left unset,
// RankWorkers fixes the worker count from the world it resolved. sc
// holds the scheme's Name and Variant as the command gave them ("" for
// the default) and its Workers (0: not given); p the Placement as in
// launcher.Resolve. Errors name Config's and Placement's fields.

// RankDefaults fills what a rank process was not told, before its
// environment is read:
//   - an elastic worker (elastic) not placed starts as rank 0 of its
//     workers and the scheme's server ranks, since the group's
//     coordinator places it, and its rendezvous comes from the
//     coordinator ("-");
//   - the workers of a scheme whose workers talk only to a center meet
//     there, not at a rendezvous ("-");
//   - dsgd ps (ps) runs sync-ps's server by default: the last rank, of
//     Workers+1 when Workers > 1; a scheme with no parameter server rank
//     is refused.
func RankDefaults(sc scheme.Config, p launcher.Placement, elastic, ps bool) (scheme.Config, launcher.Placement, error) {
	if elastic {
		if p.Rank < 0 || p.World <= 0 {
			// sync-ps's server rank comes on top of the workers.
			p.Rank, p.World = 0, max(sc.Workers, 1)+scheme.Config{Name: named(sc), Variant: sc.Variant}.Ranks()
		}
		if p.Rendezvous == "" {
			p.Rendezvous = "-" // each generation's comes from the coordinator
		}
	}
	if CenterOnly(sc.Name, sc.Workers) && p.Rendezvous == "" {
		p.Rendezvous = "-" // the workers meet at the center, not at a rendezvous
	}
	if ps {
		if sc.Name == "" {
			sc.Name = "sync-ps"
		}
		if in, _ := scheme.Lookup(sc.Name); !in.ServerUpdates {
			return sc, p, fmt.Errorf("Config.Name %s has no parameter server rank to run (sync-ps has one; the asynchronous schemes serve a center)", sc.Name)
		}
		if p.World == 0 && sc.Workers > 1 {
			p.World = sc.Workers + 1
		}
		if p.Rank < 0 && p.World > 0 {
			p.Rank = p.World - 1
		}
	}
	return sc, p, nil
}

// RankWorkers fixes the worker count from the world a rank process
// resolved: every rank, or all but the scheme's servers (sync-ps's
// server, sync-easgd's separate master: the last ranks). A Workers
// above 1 that disagrees is refused; a scheme not given is sync-tree's
// for several workers.
func RankWorkers(sc scheme.Config, world int) (scheme.Config, error) {
	ws := world - scheme.Config{Name: named(sc), Variant: sc.Variant}.Ranks()
	if sc.Workers > 1 && sc.Workers != ws {
		return sc, fmt.Errorf("Config.Workers %d disagrees with a world of %d ranks under %s", sc.Workers, world, named(sc))
	}
	sc.Workers = max(ws, 1)
	if sc.Name == "" && ws > 1 {
		sc.Name = scheme.DefaultName(ws)
	}
	return sc, nil
}

// CenterOnly reports whether the workers of scheme name, workers of them
// (0: not given), talk only to a center.
func CenterOnly(name string, workers int) bool {
	return scheme.Config{Name: name, Workers: max(workers, 1)}.CenterOnly()
}

// named is sc's scheme name, the default when it has none.
func named(sc scheme.Config) string {
	if sc.Name != "" {
		return sc.Name
	}
	return scheme.DefaultName(sc.Workers)
}

// DefaultCenterListen is where the server of a center-only scheme (dsgd
// ps) serves when its rank was left on tcp.DefaultListen (any loopback
// port): a fixed port, which its workers can be told.
const DefaultCenterListen = "127.0.0.1:7077"

// CenterPlacement places the server of center-only scheme sc (dsgd ps,
// CenterOnly): rank 0 of a world of sc.Workers ranks, serving on listen,
// DefaultCenterListen for tcp.DefaultListen. It refuses sc with no
// Workers (its center waits for every worker), naming Config's fields.
func CenterPlacement(sc scheme.Config, listen string) (launcher.Placement, string, error) {
	if sc.Workers < 1 {
		return launcher.Placement{}, "", fmt.Errorf("Config.Name %s needs Config.Workers N", sc.Name)
	}
	if listen == tcp.DefaultListen {
		listen = DefaultCenterListen
	}
	return launcher.Placement{Rank: 0, World: sc.Workers}, listen, nil
}

// DefaultWorkers is the worker count of a run told none: one worker. For
// a run told no scheme either (name "") note says why that worker (seq)
// computes on every one of the threads, naming the Config fields that
// choose another layout. Every heavy layer splits its batch across the
// worker's threads (convolution, pooling and LRN by images, inner
// product by GEMM blocks, ReLU by elements), so one worker does the
// arithmetic of N workers with no gradient exchange, no per-worker copy
// of the model and the kernels' best batch size; the synchronous schemes
// give the same numbers (tested) and exist to go past one machine.
// Measured on the machine of docs/benchmarks.md's "default layout"
// table.
func DefaultWorkers(name string, threads int) (workers int, note string) {
	if name == "" {
		note = fmt.Sprintf("default layout: one worker (seq) on %d threads: each layer splits its batch across the threads, "+
			"which on one machine beats %d workers that must also exchange gradients (docs/benchmarks.md); Config.Name and Config.Workers choose another", threads, threads)
	}
	return 1, note
}
