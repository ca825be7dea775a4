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
// /proc/cpuinfo, followed by its family, model and stepping
// ("Intel(R) Xeon(R) Platinum 8581C CPU @ 2.10GHz (family 6 model 207
// stepping 2)"), or "" where that file is missing or has no name. Cloud
// machines often name only the brand ("AMD EPYC"): the numbers are what
// tell a Zen 3 (family 25, models 0–15 and 32–95) from a Zen 4 (family
// 25, models 16–31 and 96–175) or a Zen 5 (family 26), whose kernels and
// timings differ.
func ModelName() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return modelName(bufio.NewScanner(f))
}

// modelName reads the first processor's entry: its "model name" and, when
// present, its "cpu family", "model" and "stepping".
func modelName(sc *bufio.Scanner) string {
	var name string
	var ids []string
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && name != "" {
			break // the end of the first processor's entry
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			name = v
		case "cpu family":
			ids = append(ids, "family "+v)
		case "model":
			ids = append(ids, "model "+v)
		case "stepping":
			ids = append(ids, "stepping "+v)
		}
	}
	if name == "" || len(ids) == 0 {
		return name
	}
	return name + " (" + strings.Join(ids, " ") + ")"
}
