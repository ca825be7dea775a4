package cpuinfo

import (
	"bufio"
	"os"
	"strings"

	"golang.org/x/sys/cpu"
)

// Features are the vector extensions that matter to float32 kernels, as
// the CPU reports them and the operating system enables them.
type Features struct {
	AVX2, FMA, AVX512F bool
}

// Detect reports the running CPU's features.
func Detect() Features {
	return Features{AVX2: cpu.X86.HasAVX2, FMA: cpu.X86.HasFMA, AVX512F: cpu.X86.HasAVX512F}
}

// String lists the features present, "avx2 fma avx512f", or "none".
func (f Features) String() string {
	var s []string
	for _, e := range []struct {
		on   bool
		name string
	}{{f.AVX2, "avx2"}, {f.FMA, "fma"}, {f.AVX512F, "avx512f"}} {
		if e.on {
			s = append(s, e.name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// ModelName is the processor's model name as Linux reports it in
// /proc/cpuinfo ("Intel(R) Xeon(R) Platinum 8581C CPU @ 2.10GHz"), or ""
// where that file is missing or has none.
func ModelName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return modelName(bufio.NewScanner(f))
}

func modelName(sc *bufio.Scanner) string {
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
