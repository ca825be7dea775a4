package sim

import (
	"testing"
	"time"

	"dsgd/protocol/scheme"
)

// TestHogwildEASGDExchangesOverlap: Hogwild EASGD (SC17 5) updates the
// center without a lock, so the workers' elastic exchanges run at once on
// the center; Async EASGD serves them one at a time. When the center's
// arithmetic dominates, hogwild-easgd's iteration is the shorter (the
// simulator used to treat both alike).
func TestHogwildEASGDExchangesOverlap(t *testing.T) {
	// 10M parameters at 1e9 adds/s: 30 ms of center arithmetic per
	// exchange against 1 ms of compute, over an infinitely fast network.
	m := Uniform(10_000_000, time.Millisecond)
	m.AddRate = 1e9
	iter := map[string]time.Duration{}
	for _, name := range []string{"easgd", "hogwild-easgd"} {
		res := run(t, Config{Scheme: scheme.Config{Name: name, Workers: 4, Interval: 1, Alpha: 0.1}, Model: m, Iters: 6})
		iter[name] = res.Iter
	}
	t.Logf("iteration: easgd %v, hogwild-easgd %v", iter["easgd"], iter["hogwild-easgd"])
	// easgd: 4 exchanges of 30 ms queue at the center, ~120 ms per
	// iteration; hogwild-easgd: each waits only for its own, ~30 ms.
	if iter["hogwild-easgd"] > iter["easgd"]/2 {
		t.Errorf("hogwild-easgd's iteration %v is not well below easgd's %v: its exchanges did not overlap", iter["hogwild-easgd"], iter["easgd"])
	}
}
