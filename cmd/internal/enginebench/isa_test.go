package enginebench

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"dsgd/engine/cpuinfo"
)

func TestWithoutFlag(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"--isa", "avx2", "--nets", "lenet"}, []string{"--nets", "lenet"}},
		{[]string{"--nets", "lenet", "-isa", "avx2"}, []string{"--nets", "lenet"}},
		{[]string{"--isa=avx2,all", "--reps", "1"}, []string{"--reps", "1"}},
		{[]string{"-isa=avx2"}, nil},
		{[]string{"--isanot", "x", "---isa", "y"}, []string{"--isanot", "x", "---isa", "y"}},
		{[]string{"--reps", "1", "--", "--isa", "x"}, []string{"--reps", "1", "--", "--isa", "x"}},
	}
	for _, tt := range tests {
		if got := withoutFlag(tt.in, "isa"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("withoutFlag(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestISAEnv(t *testing.T) {
	base := []string{"PATH=/bin", "OPENBLAS_CORETYPE=Zen", "DNNL_MAX_CPU_ISA=ALL", "ONEDNN_MAX_CPU_ISA=AVX", "ATEN_CPU_CAPABILITY=avx512", "HOME=/h"}
	tests := []struct {
		l    cpuinfo.ISA
		want []string
	}{
		{cpuinfo.AVX2, []string{"PATH=/bin", "HOME=/h", "ONEDNN_MAX_CPU_ISA=AVX2", "OPENBLAS_CORETYPE=Haswell", "ATEN_CPU_CAPABILITY=avx2"}},
		{cpuinfo.AVX512Core, []string{"PATH=/bin", "HOME=/h", "ONEDNN_MAX_CPU_ISA=AVX512_CORE", "OPENBLAS_CORETYPE=SkylakeX"}},
		{cpuinfo.SSE41, []string{"PATH=/bin", "HOME=/h", "ONEDNN_MAX_CPU_ISA=SSE41", "OPENBLAS_CORETYPE=Nehalem", "ATEN_CPU_CAPABILITY=default"}},
		{cpuinfo.All, []string{"PATH=/bin", "HOME=/h", "ONEDNN_MAX_CPU_ISA=ALL"}},
	}
	for _, tt := range tests {
		if got := isaEnv(base, tt.l); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("isaEnv(%v) = %q, want %q", tt.l, got, tt.want)
		}
	}
}

// TestBenchISASkipsCapsAboveCPU stands in an AVX2-only CPU: a cap above
// it is skipped with the reason, no child runs, and the table is empty.
func TestBenchISASkipsCapsAboveCPU(t *testing.T) {
	defer func(f func(cpuinfo.ISA) error) { benchUnsupported = f }(benchUnsupported)
	benchUnsupported = func(l cpuinfo.ISA) error {
		if l > cpuinfo.AVX2 && l != cpuinfo.All {
			return fmt.Errorf("%s: this CPU (AMD EPYC 7B13) has only AVX2 (missing avx512f avx512bw avx512dq avx512vl avx512cd)", l)
		}
		return nil
	}
	var stdout, stderr bytes.Buffer
	// What `dsgd bench --isa avx512_core,avx512_core_amx --nets
	// cifar10_quick --peer none --peer-nets none` parses to.
	args := []string{"--isa", "avx512_core,avx512_core_amx", "--nets", "cifar10_quick", "--peer", "none", "--peer-nets", "none"}
	c := Config{Nets: []Net{Nets[1]}, Threads: []int{1, 2}, Reps: 3, PeerLeNet: "none", PeerNets: "none", Python: "/usr/bin/python3",
		Seed: -1, PeakTime: 200 * time.Millisecond, ISAs: []cpuinfo.ISA{cpuinfo.AVX512Core, cpuinfo.AVX512CoreAMX}}
	if err := RunISAs(context.Background(), c, args, &stdout, &stderr); err != nil {
		t.Fatalf("RunISAs: %v: %s\n%s", err, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"bench: skipping AVX512_CORE: this CPU (AMD EPYC 7B13) has only AVX2 (missing avx512f avx512bw avx512dq avx512vl avx512cd); the other caps run",
		"bench: skipping AVX512_CORE_AMX: this CPU (AMD EPYC 7B13) has only AVX2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "=== ISA cap") || strings.Contains(out, "cifar10_quick  ") {
		t.Errorf("a skipped cap ran:\n%s", out)
	}
}

func TestPrintISATable(t *testing.T) {
	rows := []isaRow{
		{Net: "cifar10_quick", Batch: 100, Threads: 1, Dsgd: []float64{200, 220, 210}, Peer: []float64{100, 105, 95}, FLOPs: 6.92e9, Peak: 94.8, ISA: "AVX2", Runs: "AVX2"},
		{Net: "lenet", Batch: 64, Threads: 2, Trains: true, Dsgd: []float64{5}, FLOPs: 0.84e9, Peak: 0, ISA: "AVX2_VNNI", Runs: "AVX2"},
		{Net: "caffenet", Batch: 32, Threads: 1, Dsgd: []float64{1000}, Peer: []float64{2000}, FLOPs: 50e9, Peak: 181, ISA: "AVX512_CORE"},
	}
	var b bytes.Buffer
	printRows(&b, rows)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"net            batch threads ISA              timed            dsgd ms (range)         peer ms (range)   ratio  GFLOP/it  GFLOP/s  % peak",
		"cifar10_quick    100       1 AVX2             fwd+bwd   210.00 (200.00-220.00)   100.00 (95.00-105.00)   2.100      6.92     33.0   34.8%",
		"lenet             64       2 AVX2_VNNI->AVX2  train                       5.00                       -       -      0.84    168.0       -",
		"caffenet          32       1 AVX512_CORE      fwd+bwd                  1000.00                 2000.00   0.500     50.00     50.0   27.6%",
	}
	if len(lines) != len(want)+1 {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], w)
		}
	}
	if !strings.HasPrefix(lines[len(lines)-1], "ISA = the cap") {
		t.Errorf("legend %q", lines[len(lines)-1])
	}
}
