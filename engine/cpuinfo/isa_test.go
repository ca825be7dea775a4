package cpuinfo

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// CPUs by their features, for the level tests.
var (
	noSSE41 = isaFeatures{x86: true, model: "Intel Core 2 Duo"}
	nehalem = isaFeatures{x86: true, sse41: true}
	sandy   = isaFeatures{x86: true, sse41: true, avx: true}
	zen3    = isaFeatures{x86: true, sse41: true, avx: true, avx2: true, fma: true, model: "AMD EPYC 7B13"}
	// Haswell has AVX2 without FMA nowhere; a VM that hides FMA is the case.
	avx2NoFMA = isaFeatures{x86: true, sse41: true, avx: true, avx2: true}
	alder     = isaFeatures{x86: true, sse41: true, avx: true, avx2: true, fma: true, avxVNNI: true}
	skx       = isaFeatures{x86: true, sse41: true, avx: true, avx2: true, fma: true,
		avx512f: true, avx512bw: true, avx512dq: true, avx512vl: true, avx512cd: true, model: "Intel Xeon Gold 6148"}
	knl         = isaFeatures{x86: true, sse41: true, avx: true, avx2: true, fma: true, avx512f: true, avx512cd: true}
	icelake     = with(skx, func(f *isaFeatures) { f.avx512VNNI = true })
	zen4        = with(icelake, func(f *isaFeatures) { f.avx512BF16 = true })
	zen5        = with(zen4, func(f *isaFeatures) { f.avxVNNI = true })
	sapphire    = with(zen5, func(f *isaFeatures) { f.amxTile, f.amxBF16 = true, true })
	amxTileOnly = with(zen5, func(f *isaFeatures) { f.amxTile = true })
	arm         = isaFeatures{}
)

func with(f isaFeatures, g func(*isaFeatures)) isaFeatures {
	g(&f)
	return f
}

func TestParseISA(t *testing.T) {
	tests := []struct {
		in   string
		want ISA
		err  bool
	}{
		{"SSE41", SSE41, false},
		{"sse41", SSE41, false},
		{"avx", AVX, false},
		{"Avx2", AVX2, false},
		{"avx2_vnni", AVX2VNNI, false},
		{" avx512_core ", AVX512Core, false},
		{"AVX512_CORE_VNNI", AVX512CoreVNNI, false},
		{"avx512_core_bf16", AVX512CoreBF16, false},
		{"avx512_core_amx", AVX512CoreAMX, false},
		{"all", All, false},
		{"avx512", Below, true},
		{"avx512_mic", Below, true},
		{"below SSE41", Below, true},
		{"", Below, true},
	}
	for _, tt := range tests {
		got, err := ParseISA(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseISA(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && (!strings.Contains(err.Error(), tt.in) || !strings.Contains(err.Error(), "SSE41, AVX, AVX2, AVX2_VNNI, AVX512_CORE,")) {
			t.Errorf("ParseISA(%q) error %q: want the value and the valid names", tt.in, err)
		}
	}
	// Every name round-trips.
	for _, n := range ISANames() {
		if l, err := ParseISA(n); err != nil || l.String() != n {
			t.Errorf("ParseISA(%q) = %v, %v", n, l, err)
		}
	}
	if s := ISA(42).String(); s != "ISA(42)" {
		t.Errorf("ISA(42).String() = %q", s)
	}
}

func TestLevels(t *testing.T) {
	tests := []struct {
		name string
		f    isaFeatures
		want ISA
		// effective level under each cap, where it differs from min(cap, want)
		capped map[ISA]ISA
	}{
		{"no sse4.1", noSSE41, Below, nil},
		{"not x86", arm, Below, nil},
		{"nehalem", nehalem, SSE41, nil},
		{"sandy bridge", sandy, AVX, nil},
		{"zen 3", zen3, AVX2, map[ISA]ISA{AVX2VNNI: AVX2}},
		{"avx2 without fma", avx2NoFMA, AVX, nil},
		{"alder lake", alder, AVX2VNNI, nil},
		{"knights landing", knl, AVX2, map[ISA]ISA{AVX2VNNI: AVX2}},
		{"skylake-x", skx, AVX512Core, map[ISA]ISA{AVX2VNNI: AVX2}},
		{"ice lake", icelake, AVX512CoreVNNI, map[ISA]ISA{AVX2VNNI: AVX2}},
		{"zen 4", zen4, AVX512CoreBF16, map[ISA]ISA{AVX2VNNI: AVX2}},
		{"zen 5", zen5, AVX512CoreBF16, nil},
		{"sapphire rapids", sapphire, AVX512CoreAMX, nil},
		{"amx tile without bf16", amxTileOnly, AVX512CoreBF16, nil},
		{"no model", with(sandy, func(f *isaFeatures) { f.model = "" }), AVX, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.level(); got != tt.want {
				t.Errorf("level = %v, want %v", got, tt.want)
			}
			for c := SSE41; c <= All; c++ {
				want, ok := tt.capped[c]
				if !ok {
					want = min(c, tt.want)
				}
				if got := tt.f.effective(c); got != want {
					t.Errorf("effective(%v) = %v, want %v", c, got, want)
				}
			}
		})
	}
}

func TestMissing(t *testing.T) {
	tests := []struct {
		f    isaFeatures
		l    ISA
		want []string
	}{
		{zen3, AVX2, nil},
		{zen3, All, nil},
		{zen3, AVX512Core, []string{"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}},
		{zen3, AVX2VNNI, []string{"avx_vnni"}},
		{icelake, AVX2VNNI, []string{"avx_vnni"}},
		{zen3, AVX512CoreAMX, []string{"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16"}},
		{knl, AVX512Core, []string{"avx512bw", "avx512dq", "avx512vl"}},
		{avx2NoFMA, AVX2, []string{"fma"}},
		{noSSE41, SSE41, []string{"sse4_1"}},
		{noSSE41, AVX, []string{"sse4_1", "avx"}},
		{sapphire, AVX512CoreAMX, nil},
	}
	for _, tt := range tests {
		if got := tt.f.missing(tt.l); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v missing(%v) = %v, want %v", tt.f, tt.l, got, tt.want)
		}
	}
	if got := arm.missing(SSE41); len(got) != 1 || !strings.Contains(got[0], "x86-64") {
		t.Errorf("not x86: missing %v", got)
	}
}

func TestUnsupported(t *testing.T) {
	tests := []struct {
		f    isaFeatures
		l    ISA
		want string // "" for nil
	}{
		{zen3, AVX2, ""},
		{zen3, AVX512Core, "AVX512_CORE: this CPU (AMD EPYC 7B13) has only AVX2 (missing avx512f avx512bw avx512dq avx512vl avx512cd)"},
		{skx, AVX512CoreVNNI, "AVX512_CORE_VNNI: this CPU (Intel Xeon Gold 6148) has only AVX512_CORE (missing avx512_vnni)"},
		{icelake, AVX2VNNI, "AVX2_VNNI: this CPU (Intel Xeon Gold 6148) has AVX512_CORE_VNNI but not AVX2_VNNI (missing avx_vnni)"},
		{noSSE41, SSE41, "SSE41: this CPU (Intel Core 2 Duo) has only below SSE41 (missing sse4_1)"},
	}
	for _, tt := range tests {
		err := tt.f.unsupported(tt.l)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
			t.Errorf("unsupported(%v) = %v, want %q", tt.l, err, tt.want)
		}
	}
}

func TestBelowFloor(t *testing.T) {
	err := belowFloor(noSSE41)
	if !errors.Is(err, ErrBelowFloor) {
		t.Fatalf("%v does not wrap ErrBelowFloor", err)
	}
	for _, s := range []string{"Intel Core 2 Duo", "lacks sse4_1", "im2col + GEMM", "% peak is left blank"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q lacks %q", err, s)
		}
	}
	// The package-level check, with the CPU stood in.
	defer func(f func() isaFeatures) { features = f }(features)
	features = func() isaFeatures { return noSSE41 }
	if err := CheckFloor(); !errors.Is(err, ErrBelowFloor) {
		t.Errorf("CheckFloor on a Core 2: %v", err)
	}
	if CPUISA() != Below || Supports(SSE41) || EffectiveISA(AVX2) != Below {
		t.Errorf("Core 2: CPUISA %v, Supports(SSE41) %v", CPUISA(), Supports(SSE41))
	}
	if _, err := KernelAt(AVX2); !errors.Is(err, ErrNoKernel) {
		t.Errorf("KernelAt on a Core 2: %v", err)
	}
	features = func() isaFeatures { return zen3 }
	if err := CheckFloor(); err != nil {
		t.Errorf("CheckFloor on Zen 3: %v", err)
	}
	if CPUISA() != AVX2 || Unsupported(AVX2) != nil || Unsupported(AVX512Core) == nil {
		t.Errorf("Zen 3: CPUISA %v", CPUISA())
	}
}

func TestEnvCap(t *testing.T) {
	tests := []struct {
		onednn, dnnl string
		want         ISA
		ok           bool
		err          string
	}{
		{"", "", All, false, ""},
		{"avx2", "", AVX2, true, ""},
		{"AVX512_CORE", "avx2", AVX512Core, true, ""},
		{"", "SSE41", SSE41, true, ""},
		{"ALL", "", All, false, ""},
		{"avx512", "", All, false, "ONEDNN_MAX_CPU_ISA=avx512: unknown ISA"},
		{"", "zen", All, false, "DNNL_MAX_CPU_ISA=zen: unknown ISA"},
	}
	for _, tt := range tests {
		t.Setenv("ONEDNN_MAX_CPU_ISA", tt.onednn)
		t.Setenv("DNNL_MAX_CPU_ISA", tt.dnnl)
		l, ok, err := EnvCap()
		if l != tt.want || ok != tt.ok || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ONEDNN %q DNNL %q: %v, %v, %v; want %v, %v, %q", tt.onednn, tt.dnnl, l, ok, err, tt.want, tt.ok, tt.err)
		}
	}
	// EnvISA caps the CPU's level; a bad value is ignored, as oneDNN does.
	defer func(f func() isaFeatures) { features = f }(features)
	features = func() isaFeatures { return skx }
	for _, c := range []struct {
		env  string
		want ISA
	}{{"", AVX512Core}, {"avx2", AVX2}, {"avx512_core_amx", AVX512Core}, {"bogus", AVX512Core}, {"avx2_vnni", AVX2}} {
		t.Setenv("ONEDNN_MAX_CPU_ISA", c.env)
		t.Setenv("DNNL_MAX_CPU_ISA", "")
		if got := EnvISA(); got != c.want {
			t.Errorf("Skylake-X under %q: EnvISA %v, want %v", c.env, got, c.want)
		}
	}
}

func TestOpenBLASCore(t *testing.T) {
	want := map[ISA]string{Below: "", SSE41: "Nehalem", AVX: "Sandybridge", AVX2: "Haswell", AVX2VNNI: "Haswell",
		AVX512Core: "SkylakeX", AVX512CoreVNNI: "SkylakeX", AVX512CoreBF16: "Cooperlake", AVX512CoreAMX: "Cooperlake", All: ""}
	for l := Below; l <= All; l++ {
		if got := OpenBLASCore(l); got != want[l] {
			t.Errorf("OpenBLASCore(%v) = %q, want %q", l, got, want[l])
		}
	}
}
