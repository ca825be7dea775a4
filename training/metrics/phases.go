package metrics

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Phases accumulates wall time per named phase of an iteration (data,
// forward, backward, update, ...). It is not safe for concurrent use: each
// worker keeps its own.
type Phases struct {
	names []string
	total []time.Duration
	iters int
}

// NewPhases returns timers for the given phases, reported in this order.
func NewPhases(names ...string) *Phases {
	return &Phases{names: names, total: make([]time.Duration, len(names))}
}

// Add charges d to phase i.
func (p *Phases) Add(i int, d time.Duration) { p.total[i] += d }

// Since charges the time since t0 to phase i and returns now, so phases can
// be chained: t = p.Since(0, t).
func (p *Phases) Since(i int, t0 time.Time) time.Time {
	now := time.Now()
	p.total[i] += now.Sub(t0)
	return now
}

// Iter counts one finished iteration.
func (p *Phases) Iter() { p.iters++ }

// Merge adds q's times and iterations to p's; both must name the same
// phases.
func (p *Phases) Merge(q *Phases) {
	for i := range min(len(p.total), len(q.total)) {
		p.total[i] += q.total[i]
	}
	p.iters += q.iters
}

// Iters is the number of iterations counted.
func (p *Phases) Iters() int { return p.iters }

// Total is the time charged to phase i.
func (p *Phases) Total(i int) time.Duration { return p.total[i] }

// Sum is the time charged to all phases.
func (p *Phases) Sum() time.Duration {
	var s time.Duration
	for _, d := range p.total {
		s += d
	}
	return s
}

// Reset zeroes every timer and the iteration count.
func (p *Phases) Reset() {
	clear(p.total)
	p.iters = 0
}

// WriteTable prints the breakdown: per phase, milliseconds per iteration
// and share of the total.
func (p *Phases) WriteTable(w io.Writer) {
	width := len("total")
	for _, n := range p.names {
		width = max(width, len(n))
	}
	it := max(p.iters, 1)
	sum := p.Sum()
	fmt.Fprintf(w, "  %-*s  %10s  %6s\n", width, "phase", "ms/iter", "share")
	for i, n := range p.names {
		fmt.Fprintf(w, "  %-*s  %10.3f  %5.1f%%\n", width, n, ms(p.total[i])/float64(it), pct(p.total[i], sum))
	}
	fmt.Fprintf(w, "  %s\n", strings.Repeat("-", width+22))
	fmt.Fprintf(w, "  %-*s  %10.3f  %5.1f%%\n", width, "total", ms(sum)/float64(it), 100.0)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func pct(d, of time.Duration) float64 {
	if of <= 0 {
		return 0
	}
	return 100 * float64(d) / float64(of)
}
