package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
)

// resumeHint is the note a rank stopped by a signal adds to its error once
// it has written its snapshot (train's snapshot-on-stop).
var resumeHint = regexp.MustCompile(`\(snapshot of iteration \d+ written to [^\n]*; continue with --resume [^\n]*\)`)

// interruptedRanks is what a --transport tcp launcher stopped by a signal
// reports of its ranks, from their standard errors: the snapshot and the
// resume hint once (rank 0's, which wrote it), and any other line a rank
// wrote (a warning), once however many ranks wrote it, with its rank;
// not each rank's note that it was interrupted nor its "context canceled",
// which say again what the launcher's own line said.
func interruptedRanks(outs []string) error {
	hint := ""
	seen := map[string]bool{}
	var lines []string
	for r, out := range outs {
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(l)
			if h := resumeHint.FindString(l); h != "" {
				if hint == "" {
					hint = h
				}
				continue
			}
			if l == "" || strings.Contains(l, ": stopping after a snapshot (") || strings.HasSuffix(l, context.Canceled.Error()) || strings.HasSuffix(l, ": interrupted") || seen[l] {
				continue
			}
			seen[l] = true
			lines = append(lines, fmt.Sprintf("rank %d: %s", r, l))
		}
	}
	msg := "interrupted"
	if hint != "" {
		msg += " " + hint
	}
	if len(lines) > 0 {
		msg += "\n" + strings.Join(lines, "\n")
	}
	return errors.New(msg)
}

// liveLines passes the lines that several processes write on to one
// writer as each line completes, prefixed "[NAME] " with the writer's
// name, and each text once: the same warning from every rank is shown
// once, by the first to write it.
type liveLines struct {
	mu    sync.Mutex
	w     io.Writer
	seen  map[string]bool
	parts []*liveWriter
}

func newLiveLines(w io.Writer) *liveLines {
	return &liveLines{w: w, seen: map[string]bool{}}
}

// writer returns the io.Writer for the process called name.
func (l *liveLines) writer(name string) io.Writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	lw := &liveWriter{l: l, prefix: "[" + name + "] "}
	l.parts = append(l.parts, lw)
	return lw
}

// flush passes on every writer's unfinished last line.
func (l *liveLines) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.parts {
		if len(p.buf) > 0 {
			l.line(p.prefix, string(p.buf))
			p.buf = p.buf[:0]
		}
	}
}

// line writes text with prefix unless it was written before, or is what
// the launcher reports itself: a process's closing error ("dsgd worker:
// ...", "dsgd ps: ...", in the launcher's summary with its rank) or the
// interrupt notice the launcher printed first; l.mu held.
func (l *liveLines) line(prefix, text string) {
	text = strings.TrimRight(text, "\r")
	if strings.TrimSpace(text) == "" || l.seen[text] || reportedByLauncher(text) {
		return
	}
	l.seen[text] = true
	fmt.Fprintf(l.w, "%s%s\n", prefix, text)
}

type liveWriter struct {
	l      *liveLines
	prefix string
	buf    []byte
}

func (w *liveWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.l.line(w.prefix, string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// reportedByLauncher reports whether a child's stderr line is one the
// launcher reports itself, so that the live stream leaves it out.
func reportedByLauncher(text string) bool {
	for _, p := range []string{"dsgd worker: ", "dsgd ps: ", "dsgd smb: "} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return stopNotice.MatchString(text)
}

// stopNotice is a child's line that a signal stops it after a snapshot:
// the launcher got the signal, or sent it, and says so itself.
var stopNotice = regexp.MustCompile(`^dsgd: [a-z ]+: stopping after a snapshot`)
