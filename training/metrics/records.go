package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RecordFile is a file a run writes its records or log to (through
// Write, which flushes as the run goes).
type RecordFile struct {
	f  *os.File
	bw *bufio.Writer
	// every is how often Write flushes at most (a second), and flushed
	// when it last did.
	every   time.Duration
	flushed time.Time
	// first is the file's first line when the run appends to a file
	// that has one (a CSV file's header), without its newline.
	first string
}

// OpenRecordFile opens the file at path for a run's records: a fresh
// run truncates it, a resumed one (appending) adds to what is there,
// after cutting off a last line a killed run left unfinished. label (the
// flag or field that named the file) begins its errors.
func OpenRecordFile(label, path string, appending bool) (*RecordFile, error) {
	if !appending {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		return &RecordFile{f: f, bw: bufio.NewWriter(f), every: time.Second}, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	rf := &RecordFile{f: f, bw: bufio.NewWriter(f), every: time.Second}
	if err := rf.trimPartial(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %s: %w", label, path, err)
	}
	return rf, nil
}

// trimPartial cuts the file after its last newline and reads its first
// line.
func (rf *RecordFile) trimPartial() error {
	st, err := rf.f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == 0 {
		return nil
	}
	first, err := bufio.NewReader(io.NewSectionReader(rf.f, 0, size)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	rf.first = strings.TrimRight(first, "\r\n")
	tail := make([]byte, min(size, 1<<16))
	if _, err := rf.f.ReadAt(tail, size-int64(len(tail))); err != nil {
		return err
	}
	if tail[len(tail)-1] == '\n' {
		return nil
	}
	nl := bytes.LastIndexByte(tail, '\n')
	if nl < 0 && size > int64(len(tail)) {
		// A last line longer than what was read: end it rather than
		// guess where it began.
		_, err := rf.f.Write([]byte{'\n'})
		return err
	}
	keep := size - int64(len(tail)) + int64(nl+1)
	if keep == 0 {
		rf.first = "" // one unfinished line: nothing is kept
	}
	return rf.f.Truncate(keep)
}

// Write writes p through the buffer and, when p ends a line and the last
// flush is older than every, flushes: a program following the file (a
// plot of the curves, tail -f) sees the records as the run goes, whole
// lines only, and a long run does not write once per iteration.
func (rf *RecordFile) Write(p []byte) (int, error) {
	n, err := rf.bw.Write(p)
	if err == nil && len(p) > 0 && p[len(p)-1] == '\n' && time.Since(rf.flushed) >= rf.every {
		err = rf.bw.Flush()
		rf.flushed = time.Now()
	}
	return n, err
}

// First is the file's first line, without its newline, when the run
// appended to a file that had one (a CSV file's header); else "".
func (rf *RecordFile) First() string { return rf.first }

// Close flushes and closes the file.
func (rf *RecordFile) Close() error {
	err := rf.bw.Flush()
	if cerr := rf.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// IsCSV reports whether a records path asks for CSV: it ends in .csv.
func IsCSV(path string) bool { return strings.EqualFold(filepath.Ext(path), ".csv") }
