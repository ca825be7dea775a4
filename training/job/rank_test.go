package job

import (
	"strings"
	"testing"

	"dsgd/comm/transport/tcp"
	"dsgd/internal/launcher"
	"dsgd/protocol/scheme"
)

// TestRankDefaults: what a rank process was not told, before its
// environment is read.
func TestRankDefaults(t *testing.T) {
	none := launcher.Placement{Rank: -1}
	for _, c := range []struct {
		name        string
		sc          scheme.Config
		p           launcher.Placement
		elastic, ps bool
		scheme      string
		rank, world int
		rdv, want   string
	}{
		{name: "a worker, nothing said", p: none, rank: -1},
		{name: "elastic joiner", sc: scheme.Config{Workers: 2}, p: none, elastic: true, rank: 0, world: 2, rdv: "-"},
		{name: "elastic sync-ps counts its server", sc: scheme.Config{Name: "sync-ps", Workers: 2}, p: none, elastic: true, scheme: "sync-ps", rank: 0, world: 3, rdv: "-"},
		{name: "elastic, placed", sc: scheme.Config{Workers: 2}, p: launcher.Placement{Rank: 1, World: 2, Rendezvous: "h:1"}, elastic: true, rank: 1, world: 2, rdv: "h:1"},
		{name: "center scheme", sc: scheme.Config{Name: "easgd-rr", Workers: 2}, p: none, scheme: "easgd-rr", rank: -1, rdv: "-"},
		{name: "ps by default", sc: scheme.Config{Workers: 3}, p: none, ps: true, scheme: "sync-ps", rank: 3, world: 4},
		{name: "ps, world given", p: launcher.Placement{Rank: -1, World: 5}, ps: true, scheme: "sync-ps", rank: 4, world: 5},
		{name: "ps of a scheme with no server", sc: scheme.Config{Name: "sync-tree"}, p: none, ps: true, want: "Config.Name sync-tree has no parameter server rank to run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, p, err := RankDefaults(c.sc, c.p, c.elastic, c.ps)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc.Name != c.scheme || p.Rank != c.rank || p.World != c.world || p.Rendezvous != c.rdv {
				t.Fatalf("got scheme %q, %+v", sc.Name, p)
			}
		})
	}
}

// TestRankWorkers: the world fixes the worker count, less the scheme's
// servers.
func TestRankWorkers(t *testing.T) {
	for _, c := range []struct {
		sc      scheme.Config
		world   int
		scheme  string
		workers int
		want    string
	}{
		{world: 1, scheme: "", workers: 1},
		{world: 4, scheme: "sync-tree", workers: 4},
		{sc: scheme.Config{Name: "sync-ps"}, world: 4, scheme: "sync-ps", workers: 3},
		{sc: scheme.Config{Name: "sync-ring", Workers: 4}, world: 4, scheme: "sync-ring", workers: 4},
		{sc: scheme.Config{Workers: 3}, world: 4, want: "Config.Workers 3 disagrees with a world of 4 ranks under sync-tree"},
	} {
		sc, err := RankWorkers(c.sc, c.world)
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v in %d: got %v, want %q", c.sc, c.world, err, c.want)
			}
			continue
		}
		if err != nil || sc.Name != c.scheme || sc.Workers != c.workers {
			t.Errorf("%+v in %d: got %q %d, %v; want %q %d", c.sc, c.world, sc.Name, sc.Workers, err, c.scheme, c.workers)
		}
	}
}

func TestCenterPlacement(t *testing.T) {
	p, listen, err := CenterPlacement(scheme.Config{Name: "easgd", Workers: 4}, tcp.DefaultListen)
	if err != nil || p.Rank != 0 || p.World != 4 || listen != DefaultCenterListen {
		t.Errorf("default: %+v %q %v; want rank 0 of 4 on %s", p, listen, err, DefaultCenterListen)
	}
	if _, listen, _ := CenterPlacement(scheme.Config{Name: "easgd", Workers: 2}, "0.0.0.0:9000"); listen != "0.0.0.0:9000" {
		t.Errorf("given address: serving on %q, want 0.0.0.0:9000", listen)
	}
	if _, _, err := CenterPlacement(scheme.Config{Name: "easgd"}, tcp.DefaultListen); err == nil || err.Error() != "Config.Name easgd needs Config.Workers N" {
		t.Errorf("no workers: %v, want a refusal naming Config.Workers", err)
	}
}

func TestDefaultWorkers(t *testing.T) {
	if w, note := DefaultWorkers("", 8); w != 1 || !strings.Contains(note, "one worker (seq) on 8 threads") || !strings.Contains(note, "Config.Name and Config.Workers") {
		t.Errorf("no scheme: %d workers, note %q; want 1 and the default layout's note", w, note)
	}
	if w, note := DefaultWorkers("easgd", 8); w != 1 || note != "" {
		t.Errorf("easgd: %d workers, note %q; want 1 and none", w, note)
	}
}
