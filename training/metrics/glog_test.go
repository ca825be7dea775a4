package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"
)

// TestGlogLine: the prefix is glog's (severity, MMDD, local time to the
// microsecond, the pid in five columns, file:line), as Caffe's
// extract_seconds.py splits it.
func TestGlogLine(t *testing.T) {
	for _, tc := range []struct {
		at   time.Time
		file string
		line int
		msg  string
		want string
	}{
		{time.Date(2026, 11, 26, 22, 40, 48, 123456789, time.Local), "solver.cpp", 239, "Iteration 100, loss = 0.3",
			fmt.Sprintf("I1126 22:40:48.123456 %5d solver.cpp:239] Iteration 100, loss = 0.3\n", os.Getpid())},
		{time.Date(2026, 1, 2, 3, 4, 5, 6000, time.Local), "sgd_solver.cpp", 112, "Iteration 0, lr = 0.01",
			fmt.Sprintf("I0102 03:04:05.000006 %5d sgd_solver.cpp:112] Iteration 0, lr = 0.01\n", os.Getpid())},
	} {
		var b bytes.Buffer
		g := NewGlog(&b)
		g.Now = func() time.Time { return tc.at }
		g.Infof(tc.file, tc.line, "%s", tc.msg)
		if b.String() != tc.want {
			t.Errorf("got %q, want %q", b.String(), tc.want)
		}
		if !regexp.MustCompile(`^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] `).MatchString(b.String()) {
			t.Errorf("%q is not glog-shaped", b.String())
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestGlogErr: the first write error is kept and later lines are dropped.
func TestGlogErr(t *testing.T) {
	g := NewGlog(failWriter{})
	g.Infof("solver.cpp", 1, "a")
	g.Infof("solver.cpp", 2, "b")
	if err := g.Err(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Err() = %v", err)
	}
}
