// Command faults runs dsgd's fault matrix: each case does to a dsgd
// process what a client, a bad file or an operator can (exhaust its file
// descriptors, flood it with strangers, Ctrl-C it, feed it a broken model
// or flag, resume it) and checks that it neither crashes, hangs, loses
// work nor lets a stranger in. It prints a table of case, expectation and
// outcome and exits non-zero if any case fails. Everything runs on
// loopback, each case under a time limit. For the cases of a process
// killed or frozen and of a server dead, the last column is the detection
// latency: the time from the fault to the first message naming it.
//
// Usage:
//
//	go run ./cmd/faults -dsgd ./dsgd [-run REGEXP]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	bin := flag.String("dsgd", "./dsgd", "the dsgd `BINARY` to test")
	only := flag.String("run", "", "run only the cases whose name matches `REGEXP`")
	flag.Parse()
	exe, err := filepath.Abs(*bin)
	if err == nil {
		_, err = os.Stat(exe)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults: -dsgd: %v (build it with make build)\n", err)
		os.Exit(2)
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults: -run: %v\n", err)
		os.Exit(2)
	}
	tmp, err := os.MkdirTemp("", "dsgd-faults-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults: %v\n", err)
		os.Exit(1)
	}
	defer os.RemoveAll(tmp)
	h := &harness{exe: exe, tmp: tmp}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\texpectation\toutcome\ttime\tdetected")
	failed := 0
	start := time.Now()
	for _, c := range cases() {
		if !re.MatchString(c.name) {
			continue
		}
		t0 := time.Now()
		outcome := h.run(c)
		mark := "ok"
		if outcome != "" {
			outcome = strings.Join(strings.Fields(outcome), " ")
			if len(outcome) > 200 {
				outcome = outcome[:200] + "..."
			}
			mark = "FAIL: " + outcome
			failed++
		}
		detected := ""
		if h.detected > 0 {
			detected = fmt.Sprintf("%.1fs", h.detected.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1fs\t%s\n", c.name, c.expect, mark, time.Since(t0).Seconds(), detected)
		fmt.Fprint(os.Stderr, ".")
	}
	fmt.Fprintln(os.Stderr)
	tw.Flush()
	fmt.Printf("%d failed; %.0fs in all\n", failed, time.Since(start).Seconds())
	if failed > 0 {
		os.Exit(1)
	}
}
