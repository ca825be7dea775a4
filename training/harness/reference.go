package harness

import (
	"fmt"
	"strings"

	"dsgd/engine/tensor"
	"dsgd/protocol/scheme"
)

// Reference computes by hand, apart from the schemes, the weights a
// group's ranks should finish on (a paper's algorithm written out in a
// test): workers[r] for each worker r, and center the center's (nil
// when the reference says nothing of a center), or an error when it
// does not cover s. The compare command checks a group against one, bit
// for bit.
type Reference func(s Setup) (workers [][]float32, center []float32, err error)

// Setup is what a Reference knows of the group a ranks command started:
// its scheme's configuration and the inputs every rank shares.
type Setup struct {
	// Config is the scheme.Config the ranks run (Workers, MaxIter,
	// Interval, Alpha, Staleness, ...).
	Config scheme.Config
	// LR is the step of every update, the ranks' and the center's:
	// w −= LR·g.
	LR float32
	// Start are every rank's (and the center's) weights before the first
	// iteration; a Reference may not change them.
	Start []float32
	// Grad writes worker r's k-th gradient (its k-th compute's) into g.
	Grad func(r, k int, g []float32)
}

// setup is g's Setup.
func (g *group) setup() Setup {
	return Setup{Config: g.sc, LR: lr, Start: startWeights(g.sc.Layout.N), Grad: grad}
}

// compare checks every worker's weights and the center's against ref's,
// named name: each finished worker's and the center's hash, = or ≠ the
// reference's (with the reference's hash when they differ).
func (g *group) compare(name string, ref Reference) string {
	workers, cen, err := ref(g.setup())
	if err != nil {
		return fmt.Sprintf("error: reference %s: %v\n", name, err)
	}
	if len(workers) != g.sc.Workers {
		return fmt.Sprintf("error: reference %s gives %d workers' weights for %d workers\n", name, len(workers), g.sc.Workers)
	}
	against := func(w, want []float32) string {
		if tensor.SameBits(w, want) {
			return fmt.Sprintf("%s (= %s)", hash(w), name)
		}
		return fmt.Sprintf("%s (≠ %s, whose are %s)", hash(w), name, hash(want))
	}
	var b strings.Builder
	g.mu.Lock()
	for r, want := range workers {
		rk := g.ranks[r]
		if o := rk.unfinished(); o != "" {
			fmt.Fprintf(&b, "rank %d: %s\n", r, o)
		} else {
			fmt.Fprintf(&b, "rank %d: weights %s\n", r, against(rk.weights, want))
		}
	}
	g.mu.Unlock()
	switch {
	case cen == nil:
	case g.center == nil:
		b.WriteString("center: none\n")
	default:
		w, err := g.centerWeights()
		if err != nil {
			fmt.Fprintf(&b, "center: %v\n", err)
		} else {
			fmt.Fprintf(&b, "center: weights %s\n", against(w, cen))
		}
	}
	return b.String()
}
