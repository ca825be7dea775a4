package metrics

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress renders training progress: on a terminal one line redrawn in
// place (a bar, iteration, loss, images/s, ETA); elsewhere (logs, CI) one
// plain line per call to Line. Messages printed with Printf appear above
// the bar. It is safe for concurrent use: a run's rank 0 and its
// parameter server both print.
type Progress struct {
	mu    sync.Mutex // guards everything below and writes to w
	w     io.Writer
	tty   bool
	total int
	from  int // the iteration the run started from (non-zero after a resume)
	start time.Time
	live  bool // a bar is on screen and must be cleared before other output
}

// NewProgress returns a progress display for a run of total iterations.
// tty selects the redrawn bar.
func NewProgress(w io.Writer, total int, tty bool) *Progress {
	return &Progress{w: w, total: total, tty: tty, start: time.Now()}
}

// From tells p that the run started at iteration iter (a resumed run),
// so that the ETA divides the time spent by the iterations done since.
func (p *Progress) From(iter int) { p.from = iter }

// Status is what one progress line shows.
type Status struct {
	Iter      int     // iterations completed
	Loss      float64 // smoothed training loss
	LR        float64
	ImagesSec float64
}

// Line shows s: redraws the bar on a terminal, prints a line otherwise.
func (p *Progress) Line(s Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := time.Since(p.start)
	eta := "?"
	if done := s.Iter - p.from; done > 0 {
		rest := time.Duration(float64(elapsed) / float64(done) * float64(p.total-s.Iter))
		eta = rest.Round(time.Second).String()
	}
	text := fmt.Sprintf("iter %*d/%d  loss %.4f  lr %.5g  %.0f img/s  ETA %s", digits(p.total), s.Iter, p.total, s.Loss, s.LR, s.ImagesSec, eta)
	if !p.tty {
		fmt.Fprintln(p.w, text)
		return
	}
	const width = 24
	done := 0
	if p.total > 0 {
		done = min(width, width*s.Iter/p.total)
	}
	bar := strings.Repeat("=", done) + strings.Repeat(" ", width-done)
	fmt.Fprintf(p.w, "\r\x1b[K[%s] %s", bar, text)
	p.live = true
}

// Printf prints a message on its own line, above the bar.
func (p *Progress) Printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, format, args...)
}

// Done removes the bar.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

func (p *Progress) clear() {
	if p.live {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.live = false
	}
}

func digits(n int) int { return len(fmt.Sprint(n)) }
