package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func runSim(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := runSimulate(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestSimulateSweep(t *testing.T) {
	dir := t.TempDir()
	prefix, trace := filepath.Join(dir, "sweep"), filepath.Join(dir, "trace.json")
	out, stderr, err := runSim("--params", "1000000", "--compute-ms", "10", "--scheme", "sync-ps,sync-tree",
		"--workers", "1,2,...,8", "--network", "fdr-ib", "--iters", "3", "--plot", prefix, "--timeline", trace)
	if err != nil {
		t.Fatalf("err %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	type row struct {
		p                           int
		iter, speedup, eff, commPct float64
	}
	rows := map[string][]row{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 9 || (f[0] != "sync-ps" && f[0] != "sync-tree") {
			continue
		}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
			if err != nil {
				t.Fatalf("row %q: %q is not a number", line, s)
			}
			return v
		}
		p, _ := strconv.Atoi(f[1])
		rows[f[0]] = append(rows[f[0]], row{p, num(f[2]), num(f[7]), num(f[8]), num(f[6])})
	}
	for _, name := range []string{"sync-ps", "sync-tree"} {
		rs := rows[name]
		var ps []int
		for _, r := range rs {
			ps = append(ps, r.p)
			// speedup = P * efficiency, as the header says.
			if d := r.speedup - float64(r.p)*r.eff; d > 0.01*float64(r.p) || d < -0.01*float64(r.p) {
				t.Errorf("%s P=%d: speedup %g is not P x efficiency %g", name, r.p, r.speedup, r.eff)
			}
			if r.iter <= 0 || r.eff <= 0 || r.eff > 1.001 || r.commPct < 0 || r.commPct > 100 {
				t.Errorf("%s P=%d: implausible row %+v", name, r.p, r)
			}
		}
		if !slices.Equal(ps, []int{1, 2, 4, 8}) {
			t.Errorf("%s: rows for P = %v, want 1, 2, 4, 8\n%s", name, ps, out)
		}
		// Communication only grows with P: iteration time does not fall.
		for i := 1; i < len(rs); i++ {
			if rs[i].iter < rs[i-1].iter {
				t.Errorf("%s: iteration time falls from %g ms at P=%d to %g at P=%d", name, rs[i-1].iter, rs[i-1].p, rs[i].iter, rs[i].p)
			}
		}
	}
	if ps, tree := rows["sync-ps"], rows["sync-tree"]; len(ps) == 4 && len(tree) == 4 && ps[3].iter <= tree[3].iter {
		t.Errorf("at P=8 sync-ps takes %g ms, sync-tree %g: the parameter server's link should be the bottleneck", ps[3].iter, tree[3].iter)
	}
	for _, want := range []string{"speedup = P*T1/T(P)", "efficiency = T1/T(P)", "fdr-ib"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"-time.png", "-time.svg", "-efficiency.png", "-efficiency.svg"} {
		if st, err := os.Stat(prefix + f); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", prefix+f, err)
		}
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Ph  string `json:"ph"`
			PID int    `json:"pid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("timeline is not JSON: %v", err)
	}
	pids, spans := map[int]bool{}, 0
	for _, e := range tr.TraceEvents {
		pids[e.PID] = true
		if e.Ph == "X" {
			spans++
		}
	}
	if len(pids) != 8 || spans == 0 {
		t.Errorf("timeline has %d processes and %d spans; want 8 runs with spans", len(pids), spans)
	}
}

func TestSimulateBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad network", []string{"--params", "100", "--compute-ms", "1", "--network", "token-ring"}, "--network"},
		{"more layers than params", []string{"--params", "10", "--compute-ms", "1", "--layers", "11"}, "--layers"},
		{"layers of a model", []string{"--model", "lenet", "--layers", "3"}, "--layers"},
		{"bad network key", []string{"--params", "100", "--compute-ms", "1", "--network", "alpha=1us,gamma=2"}, "--network"},
		{"workers not a number", []string{"--params", "100", "--compute-ms", "1", "--workers", "1,two"}, "--workers"},
		{"workers zero", []string{"--params", "100", "--compute-ms", "1", "--workers", "0"}, "--workers"},
		{"workers not increasing", []string{"--params", "100", "--compute-ms", "1", "--workers", "4,2"}, "--workers"},
		{"unknown scheme", []string{"--params", "100", "--compute-ms", "1", "--scheme", "sync-tree,gossip"}, "--scheme gossip"},
		{"seq with many workers", []string{"--params", "100", "--compute-ms", "1", "--scheme", "seq", "--workers", "1,2"}, "--scheme seq with --workers 2"},
		{"params without compute", []string{"--params", "100"}, "--compute-ms"},
		{"compute without params", []string{"--compute-ms", "5"}, "--params"},
		{"params and model", []string{"--params", "100", "--compute-ms", "1", "--model", "lenet"}, "not both"},
		{"bad straggler", []string{"--params", "100", "--compute-ms", "1", "--straggle", "3"}, "--straggle"},
		{"straggler rank out of range", []string{"--params", "100", "--compute-ms", "1", "--workers", "1,2", "--straggle", "5:1ms"}, "--straggle"},
		{"iters zero", []string{"--params", "100", "--compute-ms", "1", "--iters", "0"}, "--iters"},
		{"bad interval", []string{"--params", "100", "--compute-ms", "1", "--interval", "0"}, "--interval"},
		{"bad alpha", []string{"--params", "100", "--compute-ms", "1", "--scheme", "easgd", "--alpha", "1.5"}, "--alpha"},
		{"bad allreduce", []string{"--params", "100", "--compute-ms", "1", "--allreduce", "butterfly"}, "--allreduce"},
		{"positional", []string{"sync-ps"}, "unexpected argument"},
		{"validate with network", []string{"--validate", "--network", "fdr-ib"}, "--validate"},
		{"validate repeat zero", []string{"--validate", "--repeat", "0"}, "--repeat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runSim(tt.args...)
			if !errors.Is(err, errUsage) {
				t.Fatalf("err = %v, want errUsage\nstdout:\n%s", err, out)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not name %q", stderr, tt.want)
			}
			if out != "" {
				t.Errorf("printed before failing: %q", out)
			}
		})
	}
}

// TestSimulatePowerSGD: simulate --compress powersgd:R, topk:F and sign
// cut the simulated communication of a synchronous scheme; fp16 (the
// wire's, not modelled), a bad rank, and a scheme without a gradient
// allreduce are refused.
func TestSimulatePowerSGD(t *testing.T) {
	dir := t.TempDir()
	bytes := func(args ...string) string {
		code, out, errs := runCmd(t, dir, append([]string{"simulate", "--params", "4000000", "--layers", "4", "--compute-ms", "50", "--workers", "16", "--iters", "4", "--scheme", "sync-ring"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
		return out
	}
	comm := func(out string) float64 {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 4 && f[0] == "sync-ring" {
				v, err := strconv.ParseFloat(f[4], 64)
				if err == nil {
					return v
				}
			}
		}
		t.Fatalf("no sync-ring row in\n%s", out)
		return 0
	}
	plain, comp := comm(bytes()), comm(bytes("--compress", "powersgd:2"))
	if !(comp < plain/10) {
		t.Errorf("exposed communication %.3f ms with powersgd:2, %.3f ms plain: want it cut tenfold at least", comp, plain)
	}
	if topk := comm(bytes("--compress", "topk:0.01")); !(topk < plain/5) {
		t.Errorf("exposed communication %.3f ms with topk:0.01, %.3f ms plain: want it cut fivefold at least", topk, plain)
	}
	for _, bad := range [][]string{{"--compress", "fp16"}, {"--compress", "powersgd:0"}, {"--compress", "powersgd:2", "--scheme", "async"}} {
		args := append([]string{"simulate", "--params", "1000", "--compute-ms", "5", "--workers", "2", "--iters", "2", "--scheme", "sync-ring"}, bad...)
		if code, _, errs := runCmd(t, dir, args...); code == 0 || !strings.Contains(errs, "ompress") && !strings.Contains(errs, "PowerSGD") {
			t.Errorf("%v: exit %d, %q; want a refusal", bad, code, errs)
		}
	}
}
