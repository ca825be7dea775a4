package enginebench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"dsgd/engine/cpuinfo"
)

// isaEnvVars are the variables a child of --isa gets from its cap; the
// parent's own values of them are dropped.
var isaEnvVars = []string{"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY"}

// isaEnv is the environment of the child that runs under cap l: base less
// isaEnvVars, plus ONEDNN_MAX_CPU_ISA (oneDNN's, dsgd's and PyTorch's
// bundled copy), OPENBLAS_CORETYPE (the OpenBLAS core of the level) and,
// for caps below what PyTorch's own vector kernels would pick,
// ATEN_CPU_CAPABILITY ("avx2" at AVX2, "default" below). At the AVX-512
// levels ATen keeps its own choice, which never exceeds them.
func isaEnv(base []string, l cpuinfo.ISA) []string {
	var env []string
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(isaEnvVars, name) {
			env = append(env, kv)
		}
	}
	env = append(env, "ONEDNN_MAX_CPU_ISA="+l.String())
	if core := cpuinfo.OpenBLASCore(l); core != "" {
		env = append(env, "OPENBLAS_CORETYPE="+core)
	}
	switch {
	case l == cpuinfo.AVX2 || l == cpuinfo.AVX2VNNI:
		env = append(env, "ATEN_CPU_CAPABILITY=avx2")
	case l < cpuinfo.AVX2:
		env = append(env, "ATEN_CPU_CAPABILITY=default")
	}
	return env
}

// withoutFlag returns args less every form of the flag name ("-name v",
// "--name v", "-name=v", "--name=v"), for a child's command line.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		bare := strings.TrimLeft(a, "-")
		if len(a)-len(bare) == 1 || len(a)-len(bare) == 2 {
			if bare == name {
				i++ // and its value
				continue
			}
			if strings.HasPrefix(bare, name+"=") {
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// isaRow is one row of bench's table, as printRows prints it and an
// --isa child hands it to its parent.
type isaRow struct {
	Net     string    `json:"net"`
	Batch   int       `json:"batch"`
	Threads int       `json:"threads"`
	Trains  bool      `json:"trains"`
	Dsgd    []float64 `json:"dsgd_ms"`
	Peer    []float64 `json:"peer_ms,omitempty"`
	FLOPs   float64   `json:"flops"`
	// Peak is the FMA peak at this row's thread count measured under the
	// cap, GFLOP/s; 0 where not measured.
	Peak float64 `json:"peak_gflops"`
	// ISA is the cap and Runs the level oneDNN reported running at.
	ISA  string `json:"isa"`
	Runs string `json:"runs,omitempty"`
}

// tableRows are the table's rows for a run's results: peaks by thread
// count, isa the run's cap ("" for none).
func tableRows(rows []*benchRow, peaks map[int]float64, isa capCheck) []isaRow {
	var out []isaRow
	for _, r := range rows {
		out = append(out, isaRow{Net: r.net.Name, Batch: r.net.Batch, Threads: r.threads, Trains: r.net.Trains(),
			Dsgd: r.dsgd, Peer: r.peer, FLOPs: r.flops, Peak: peaks[r.threads], ISA: isa.cap, Runs: isa.runs})
	}
	return out
}

// writeBenchRows writes a child's rows for its parent.
func writeBenchRows(path string, rows []isaRow) error {
	b, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("--rows-to: %w", err)
	}
	return nil
}

// benchUnsupported says why this CPU cannot run a cap (nil when it can);
// a variable so that tests can stand in a smaller CPU.
var benchUnsupported = cpuinfo.Unsupported

// RunISAs runs `dsgd bench` with the same flags (args) less --isa once
// per cap of c.ISAs, as a child of this process with the cap's environment (isaEnv),
// streaming its output, and prints the children's rows in one table with
// an ISA column. A cap this CPU lacks is skipped with the reason; a child
// that fails is reported and the rest still run (the error is returned at
// the end).
func RunISAs(ctx context.Context, c Config, args []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--isa: cannot find this program to run it per cap: %w", err)
	}
	dir, err := os.MkdirTemp("", "dsgd-bench-isa-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	base := withoutFlag(withoutFlag(args, "isa"), "rows-to")
	var names []string
	for _, l := range c.ISAs {
		names = append(names, l.String())
	}
	fmt.Fprintf(stdout, "bench: --isa %s: one `dsgd bench` per cap, with ONEDNN_MAX_CPU_ISA=<cap> and OPENBLAS_CORETYPE=<its core> (ATEN_CPU_CAPABILITY too below AVX-512) in its environment and its peers'; this CPU's level is %s\n",
		strings.Join(names, ","), cpuinfo.CPUISA())
	var rows []isaRow
	var failed []string
	for _, l := range c.ISAs {
		if why := benchUnsupported(l); why != nil {
			fmt.Fprintf(stdout, "bench: skipping %s: %v; the other caps run\n", l, strings.TrimPrefix(why.Error(), l.String()+": "))
			continue
		}
		file := filepath.Join(dir, l.String()+".json")
		cmd := exec.CommandContext(ctx, exe, append([]string{"bench"}, append(slices.Clone(base), "--rows-to", file)...)...)
		// DSGD_CHILD: the child writes plainly and this process's stderr
		// stamps its lines once (a stamping child's lines were stamped
		// twice).
		cmd.Env = append(isaEnv(os.Environ(), l), "DSGD_CHILD=1")
		cmd.Stdout, cmd.Stderr = stdout, stderr
		fmt.Fprintf(stdout, "\n=== ISA cap %s: %s\n", l, strings.Join(capVars(cmd.Env), " "))
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(stdout, "bench: the run under %s failed: %v\n", l, err)
			failed = append(failed, l.String())
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("--isa %s: the child wrote no rows: %w", l, err)
		}
		var rs []isaRow
		if err := json.Unmarshal(b, &rs); err != nil {
			return fmt.Errorf("--isa %s: the child's rows: %w", l, err)
		}
		rows = append(rows, rs...)
	}
	fmt.Fprintln(stdout)
	printRows(stdout, rows)
	if len(failed) > 0 {
		return fmt.Errorf("--isa: the runs under %s failed (their output is above)", strings.Join(failed, ", "))
	}
	return nil
}

// capVars are the isaEnvVars set in env, for the output.
func capVars(env []string) []string {
	var s []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(isaEnvVars, name) {
			s = append(s, kv)
		}
	}
	return s
}

// printRows prints bench's table: per net and thread count (and cap,
// with an ISA column when any row has one) the medians over repetitions
// with their ranges, the ratio, dsgd's FLOP rate and its share of the FMA
// peak measured at that thread count (under that cap). The ISA column
// shows the cap, with the level oneDNN ran at where it differs.
func printRows(w io.Writer, rows []isaRow) {
	capped := slices.ContainsFunc(rows, func(r isaRow) bool { return r.ISA != "" })
	isaCol := func(s string) string {
		if !capped {
			return ""
		}
		return fmt.Sprintf(" %-16s", s)
	}
	fmt.Fprintf(w, "%-14s %5s %7s%s %-8s %23s %23s %7s %9s %8s %7s\n", "net", "batch", "threads", isaCol("ISA"), "timed", "dsgd ms (range)", "peer ms (range)", "ratio", "GFLOP/it", "GFLOP/s", "% peak")
	for _, r := range rows {
		if len(r.Dsgd) == 0 {
			continue
		}
		timed := "fwd+bwd"
		if r.Trains {
			timed = "train"
		}
		isa := r.ISA
		if r.Runs != "" && !strings.EqualFold(r.Runs, r.ISA) {
			isa += "->" + r.Runs
		}
		ours := Median(r.Dsgd)
		peer, ratio := "-", "-"
		if len(r.Peer) > 0 {
			peer = msRange(r.Peer)
			ratio = fmt.Sprintf("%.3f", ours/Median(r.Peer))
		}
		rate := r.FLOPs / ours / 1e6 // FLOP per ms -> GFLOP/s
		pct := "-"
		if r.Peak > 0 {
			pct = fmt.Sprintf("%.1f%%", 100*rate/r.Peak)
		}
		fmt.Fprintf(w, "%-14s %5d %7d%s %-8s %23s %23s %7s %9.2f %8.1f %7s\n", r.Net, r.Batch, r.Threads, isaCol(isa), timed, msRange(r.Dsgd), peer, ratio, r.FLOPs/1e9, rate, pct)
	}
	if capped {
		fmt.Fprintln(w, "ISA = the cap (ONEDNN_MAX_CPU_ISA; ->X where oneDNN reported running at X instead); ratio = dsgd median / peer median, both under the cap; % peak = dsgd's GFLOP/s over the FMA peak measured under that cap at that thread count")
		return
	}
	fmt.Fprintln(w, "ratio = dsgd median / peer median per iteration: below 1 means dsgd is faster; % peak = dsgd's GFLOP/s over the FMA peak measured at that thread count")
}

// capCheck is what a run under a cap found: the cap ("" for none) and
// the level oneDNN reports running at.
type capCheck struct{ cap, runs string }

var dnnlISA = regexp.MustCompile(`ISA (\S+)`)

// checkCap, under ONEDNN_MAX_CPU_ISA, prints the cap and the level it
// means on this CPU, and warns where oneDNN (conv, the convolution
// engine's description) or dsgd's OpenBLAS (gemmKernel) run at another
// level; it also says what the peers inherit. The warnings go to ew (the
// standard error), the rest to w. Without a cap it prints nothing.
func checkCap(w, ew io.Writer, conv, gemmKernel string) capCheck {
	l, ok, err := cpuinfo.EnvCap()
	if err != nil {
		fmt.Fprintf(ew, "bench: warning: %v; oneDNN ignores it and runs at the CPU's level\n", err)
		return capCheck{}
	}
	if !ok {
		return capCheck{}
	}
	eff := cpuinfo.EffectiveISA(l)
	check := capCheck{cap: l.String()}
	fmt.Fprintf(w, "bench: ISA cap ONEDNN_MAX_CPU_ISA=%s: %s on this CPU (its level is %s)\n", l, eff, cpuinfo.CPUISA())
	if m := dnnlISA.FindStringSubmatch(conv); m != nil {
		check.runs = strings.ToUpper(m[1])
		if !strings.EqualFold(m[1], eff.String()) {
			fmt.Fprintf(ew, "bench: warning: oneDNN runs at %s, not at %s: the cap did not take (was oneDNN loaded before the variable was set?)\n", m[1], strings.ToLower(eff.String()))
		}
	} else {
		fmt.Fprintf(ew, "bench: warning: oneDNN is not running (%s): the cap applies to OpenBLAS and the peers only\n", conv)
	}
	if core := os.Getenv("OPENBLAS_CORETYPE"); core != "" && gemmKernel != "" && !strings.EqualFold(core, gemmKernel) {
		fmt.Fprintf(ew, "bench: warning: dsgd's GEMM runs OpenBLAS's %s kernel, not OPENBLAS_CORETYPE=%s: its GEMM is not under the cap\n", gemmKernel, core)
	}
	fmt.Fprintf(w, "bench: the peers run under the same cap: %s\n", strings.Join(capVars(os.Environ()), " "))
	return check
}

// peerKeeps says whether a variable of peerUnsetEnv stays in the peers'
// environment: OPENBLAS_CORETYPE does under an ISA cap.
func peerKeeps(name string) bool {
	_, capped, _ := cpuinfo.EnvCap()
	return capped && name == "OPENBLAS_CORETYPE"
}
