package cpuinfo

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// ISA is an x86-64 vector instruction-set level as oneDNN names them in
// ONEDNN_MAX_CPU_ISA: each level is the one below it plus some
// extensions, except AVX2_VNNI, which the AVX-512 levels do not include
// (Skylake-X and Ice Lake have AVX-512 but no VEX-encoded VNNI).
type ISA int

// The levels, lowest first. Below is a CPU under dsgd's floor, SSE4.1;
// All is no cap at all (ONEDNN_MAX_CPU_ISA=ALL).
const (
	Below ISA = iota
	SSE41
	AVX
	AVX2
	AVX2VNNI
	AVX512Core
	AVX512CoreVNNI
	AVX512CoreBF16
	AVX512CoreAMX
	All
)

// isaNames are oneDNN's names of the levels, as ONEDNN_MAX_CPU_ISA takes
// them.
var isaNames = [...]string{
	Below:          "below SSE41",
	SSE41:          "SSE41",
	AVX:            "AVX",
	AVX2:           "AVX2",
	AVX2VNNI:       "AVX2_VNNI",
	AVX512Core:     "AVX512_CORE",
	AVX512CoreVNNI: "AVX512_CORE_VNNI",
	AVX512CoreBF16: "AVX512_CORE_BF16",
	AVX512CoreAMX:  "AVX512_CORE_AMX",
	All:            "ALL",
}

// String is oneDNN's name of the level: "AVX2", "AVX512_CORE", "ALL".
func (l ISA) String() string {
	if l < Below || l > All {
		return fmt.Sprintf("ISA(%d)", int(l))
	}
	return isaNames[l]
}

// ISANames lists the names ParseISA accepts, lowest level first.
func ISANames() []string {
	var s []string
	for l := SSE41; l <= All; l++ {
		s = append(s, l.String())
	}
	return s
}

// ParseISA parses one of oneDNN's ONEDNN_MAX_CPU_ISA names, in any case
// ("avx2", "AVX512_CORE", "all"). The error lists the valid names.
func ParseISA(s string) (ISA, error) {
	t := strings.TrimSpace(s)
	for l := SSE41; l <= All; l++ {
		if strings.EqualFold(t, l.String()) {
			return l, nil
		}
	}
	return Below, fmt.Errorf("unknown ISA %q; the levels are %s", s, strings.Join(ISANames(), ", "))
}

// isaFeatures are the CPU features the levels need, as Linux's
// /proc/cpuinfo flags name them.
type isaFeatures struct {
	x86                                   bool // an x86 CPU at all
	sse41, avx, avx2, fma, avxVNNI        bool
	avx512f, avx512bw, avx512dq, avx512vl bool
	avx512cd, avx512VNNI, avx512BF16      bool
	amxTile, amxBF16                      bool
	model                                 string
}

// detectISAFeatures reads the running CPU's features through
// golang.org/x/sys/cpu, which checks that the OS saves the YMM and ZMM
// registers too (the AMX flags are the CPU's: oneDNN asks the kernel for
// the tile state itself, and falls back to AVX512_CORE_BF16 if refused).
func detectISAFeatures() isaFeatures {
	x := cpu.X86
	return isaFeatures{
		x86:   runtime.GOARCH == "amd64" || runtime.GOARCH == "386",
		sse41: x.HasSSE41, avx: x.HasAVX, avx2: x.HasAVX2, fma: x.HasFMA, avxVNNI: x.HasAVXVNNI,
		avx512f: x.HasAVX512F, avx512bw: x.HasAVX512BW, avx512dq: x.HasAVX512DQ, avx512vl: x.HasAVX512VL,
		avx512cd: x.HasAVX512CD, avx512VNNI: x.HasAVX512VNNI, avx512BF16: x.HasAVX512BF16,
		amxTile: x.HasAMXTile, amxBF16: x.HasAMXBF16,
		model: ModelName(),
	}
}

// needs lists, per level, the features it adds to the level(s) it builds
// on (see builds).
func (f isaFeatures) needs(l ISA) []struct {
	name string
	on   bool
} {
	type feat = struct {
		name string
		on   bool
	}
	switch l {
	case SSE41:
		return []feat{{"sse4_1", f.sse41}}
	case AVX:
		return []feat{{"avx", f.avx}}
	case AVX2:
		return []feat{{"avx2", f.avx2}, {"fma", f.fma}}
	case AVX2VNNI:
		return []feat{{"avx_vnni", f.avxVNNI}}
	case AVX512Core:
		return []feat{{"avx512f", f.avx512f}, {"avx512bw", f.avx512bw}, {"avx512dq", f.avx512dq}, {"avx512vl", f.avx512vl}, {"avx512cd", f.avx512cd}}
	case AVX512CoreVNNI:
		return []feat{{"avx512_vnni", f.avx512VNNI}}
	case AVX512CoreBF16:
		return []feat{{"avx512_bf16", f.avx512BF16}}
	case AVX512CoreAMX:
		return []feat{{"amx_tile", f.amxTile}, {"amx_bf16", f.amxBF16}}
	}
	return nil
}

// builds is the chain of levels l consists of, lowest first: every level
// up to it, less AVX2_VNNI for the AVX-512 levels; none for All, which
// caps nothing and needs nothing.
func builds(l ISA) []ISA {
	var s []ISA
	for b := SSE41; b <= l && l < All; b++ {
		if b == AVX2VNNI && l != AVX2VNNI {
			continue
		}
		s = append(s, b)
	}
	return s
}

// missing lists the features the CPU lacks for level l, in /proc/cpuinfo
// spelling; empty when it can run l. All needs nothing.
func (f isaFeatures) missing(l ISA) []string {
	if !f.x86 && l != All {
		return []string{"x86-64 (this is " + runtime.GOARCH + ")"}
	}
	var m []string
	for _, b := range builds(l) {
		for _, n := range f.needs(b) {
			if !n.on {
				m = append(m, n.name)
			}
		}
	}
	return m
}

// level is the highest level the CPU supports, Below where it lacks
// SSE4.1 (or is not x86).
func (f isaFeatures) level() ISA {
	return f.effective(All)
}

// effective is the highest level at most limit that the CPU supports: a
// cap of AVX2_VNNI on a CPU with AVX-512 but no AVX-VNNI is AVX2, as in
// oneDNN.
func (f isaFeatures) effective(limit ISA) ISA {
	for l := min(limit, AVX512CoreAMX); l >= SSE41; l-- {
		if len(f.missing(l)) == 0 {
			return l
		}
	}
	return Below
}

// features is the running CPU's; a variable so that tests can stand in
// another CPU.
var features = detectISAFeatures

// CPUISA is the highest level this CPU and operating system support,
// Below where the CPU lacks SSE4.1 or is not x86.
func CPUISA() ISA { return features().level() }

// EffectiveISA is the level oneDNN runs at under cap: the highest level
// at most cap that this CPU supports. EffectiveISA(All) is CPUISA().
func EffectiveISA(cap ISA) ISA { return features().effective(cap) }

// Missing lists the CPU features (as /proc/cpuinfo names them) that this
// CPU lacks for level l: empty when it can run l.
func Missing(l ISA) []string { return features().missing(l) }

// Supports says whether this CPU and OS can run level l in full.
func Supports(l ISA) bool { return len(Missing(l)) == 0 }

// ErrBelowFloor is what CheckFloor returns on a CPU without SSE4.1.
var ErrBelowFloor = errors.New("cpuinfo: CPU below SSE4.1, dsgd's floor")

// CheckFloor returns nil on a CPU with SSE4.1 and otherwise an error
// wrapping ErrBelowFloor that says what is missing and what runs instead.
func CheckFloor() error {
	f := features()
	if f.level() >= SSE41 {
		return nil
	}
	return belowFloor(f)
}

func belowFloor(f isaFeatures) error {
	model := f.model
	if model == "" {
		model = "unknown model"
	}
	return fmt.Errorf("%w: this CPU (%s) lacks %s; oneDNN has no kernels for it and the FMA peak is not measured: "+
		"convolution runs im2col + GEMM on OpenBLAS's generic kernel or dsgd's pure-Go GEMM, and %% peak is left blank",
		ErrBelowFloor, model, strings.Join(f.missing(SSE41), " "))
}

// Unsupported returns nil when this CPU can run level l and otherwise an
// error naming the level, the CPU, its own highest level and the missing
// features: "AVX512_CORE: this CPU (AMD Ryzen 9 5950X) has only AVX2
// (missing avx512f avx512bw avx512dq avx512vl avx512cd)".
func Unsupported(l ISA) error { return features().unsupported(l) }

func (f isaFeatures) unsupported(l ISA) error {
	m := f.missing(l)
	if len(m) == 0 {
		return nil
	}
	model := f.model
	if model == "" {
		model = "unknown model"
	}
	has := f.level()
	if has > l {
		return fmt.Errorf("%s: this CPU (%s) has %s but not %s (missing %s)", l, model, has, l, strings.Join(m, " "))
	}
	return fmt.Errorf("%s: this CPU (%s) has only %s (missing %s)", l, model, has, strings.Join(m, " "))
}

// EnvCap reads the cap oneDNN obeys from the environment:
// ONEDNN_MAX_CPU_ISA, else DNNL_MAX_CPU_ISA. ok is false when neither is
// set (or it is empty) and for ALL; an unknown value is an error naming
// the variable.
func EnvCap() (l ISA, ok bool, err error) {
	for _, v := range []string{"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"} {
		s := os.Getenv(v)
		if s == "" {
			continue
		}
		l, err := ParseISA(s)
		if err != nil {
			return All, false, fmt.Errorf("%s=%s: %w", v, s, err)
		}
		return l, l != All, nil
	}
	return All, false, nil
}

// EnvISA is the level this process runs at: CPUISA capped by EnvCap (an
// unparseable cap is ignored, as oneDNN ignores it).
func EnvISA() ISA {
	l, ok, err := EnvCap()
	if !ok || err != nil {
		return CPUISA()
	}
	return EffectiveISA(l)
}

// OpenBLASCore is the OPENBLAS_CORETYPE whose kernels use no instruction
// above level l: Nehalem (SSE), Sandybridge (AVX), Haswell (AVX2),
// SkylakeX (AVX-512), Cooperlake (AVX-512 with bf16; OpenBLAS 0.3.21 has
// no AMX core, and its sgemm would not use the tiles). "" for All and
// Below: OpenBLAS picks its own.
func OpenBLASCore(l ISA) string {
	switch l {
	case SSE41:
		return "Nehalem"
	case AVX:
		return "Sandybridge"
	case AVX2, AVX2VNNI:
		return "Haswell"
	case AVX512Core, AVX512CoreVNNI:
		return "SkylakeX"
	case AVX512CoreBF16, AVX512CoreAMX:
		return "Cooperlake"
	}
	return ""
}
