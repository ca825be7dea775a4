package metrics

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPhasesTable(t *testing.T) {
	p := NewPhases("data", "forward")
	p.Add(0, 10*time.Millisecond)
	p.Add(1, 30*time.Millisecond)
	p.Iter()
	p.Iter()
	var buf bytes.Buffer
	p.WriteTable(&buf)
	out := buf.String()
	for _, want := range []string{"data", "5.000", "25.0%", "forward", "15.000", "75.0%", "total", "20.000"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	p.Reset()
	if p.Sum() != 0 || p.Iters() != 0 {
		t.Fatal("Reset left time or iterations")
	}
}

func TestProgressPlainAndTTY(t *testing.T) {
	var plain bytes.Buffer
	p := NewProgress(&plain, 100, false)
	p.Line(Status{Iter: 50, Loss: 0.5, LR: 0.01, ImagesSec: 1000})
	if got := plain.String(); !strings.Contains(got, "iter  50/100") || !strings.Contains(got, "loss 0.5000") || strings.Contains(got, "\r") {
		t.Fatalf("plain line: %q", got)
	}
	var tty bytes.Buffer
	p = NewProgress(&tty, 100, true)
	p.Line(Status{Iter: 50})
	p.Printf("test accuracy %.2f\n", 0.9)
	got := tty.String()
	if !strings.Contains(got, "[============            ]") || !strings.Contains(got, "\r\x1b[Ktest accuracy 0.90") {
		t.Fatalf("tty output: %q", got)
	}
}

// TestProgressETAAfterResume: the ETA of a resumed run counts only the
// iterations done since the resume.
func TestProgressETAAfterResume(t *testing.T) {
	var out bytes.Buffer
	p := NewProgress(&out, 100, false)
	p.From(90)
	p.start = time.Now().Add(-10 * time.Second)
	p.Line(Status{Iter: 95})
	if got := out.String(); !strings.Contains(got, "ETA 10s") {
		t.Fatalf("5 iterations in 10 s, 5 to go: %q, want ETA 10s", got)
	}
}

// Rank 0 and a parameter server print progress at once (sync-ps with
// display and snapshots): run under -race.
func TestProgressConcurrent(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, 100, true)
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if g == 0 {
					p.Line(Status{Iter: i})
				} else {
					p.Printf("snapshot %d\n", i)
				}
			}
		}()
	}
	wg.Wait()
	p.Done()
	if got := strings.Count(b.String(), "snapshot "); got != 50 {
		t.Fatalf("%d snapshot lines, want 50", got)
	}
}
