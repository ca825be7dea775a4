package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Device is one GPU.
type Device struct {
	// Index is its CUDA device ordinal (what -gpu names).
	Index int
	// Name is the device's name, as nvidia-smi prints it.
	Name string
	// Memory is its global memory in bytes.
	Memory int64
	// Major and Minor are its compute capability (9.0: an H100).
	Major, Minor int
}

func (d Device) String() string {
	return fmt.Sprintf("GPU %d: %s, %.1f GiB, compute capability %d.%d", d.Index, d.Name, float64(d.Memory)/(1<<30), d.Major, d.Minor)
}

// Info is what Probe found.
type Info struct {
	// Driver is the CUDA version the driver supports, as cuDriverGetVersion
	// gives it (12040 is 12.4).
	Driver int
	// Devices are the GPUs, by index.
	Devices []Device
	// CUBLAS and CUDNN are the libraries' versions ("13.0.2"), or why
	// they could not be loaded.
	CUBLAS, CUDNN string
	// Libs are the files the libraries were loaded from, by soname
	// pattern, or the sonames left to the dynamic loader's search.
	Libs []string
}

// DriverVersion is Driver as "MAJOR.MINOR".
func (in *Info) DriverVersion() string {
	return fmt.Sprintf("%d.%d", in.Driver/1000, in.Driver%1000/10)
}

// ParseIDs reads Caffe's -gpu list: "all", or device indices separated by
// commas ("0", "0,1"), each below n, the number of GPUs found; no index
// twice.
func ParseIDs(spec string, n int) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "all" {
		if n == 0 {
			return nil, fmt.Errorf("--gpu all: no GPU was found")
		}
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		return ids, nil
	}
	var ids []int
	for _, f := range strings.Split(spec, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		switch {
		case err != nil || id < 0:
			return nil, fmt.Errorf("--gpu %q: want all, or device indices such as 0 or 0,1", spec)
		case id >= n:
			return nil, fmt.Errorf("--gpu %q: GPU %d out of range: this machine has %d GPU(s)", spec, id, n)
		case slices.Contains(ids, id):
			return nil, fmt.Errorf("--gpu %q: GPU %d given twice", spec, id)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// libDirs are the folders searched for cuBLAS and cuDNN before the
// dynamic loader's own search: DSGD_CUDA_LIBS (folders separated by
// colons), the NVIDIA wheels' nvidia/*/lib folders in every Python
// site-packages or dist-packages folder found (the active virtual
// environment's first), and the CUDA toolkit's lib64.
func libDirs(getenv func(string) string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(getenv("DSGD_CUDA_LIBS")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	var roots []string
	if v := getenv("VIRTUAL_ENV"); v != "" {
		roots = append(roots, filepath.Join(v, "lib", "python3*", "site-packages"))
	}
	if h := getenv("HOME"); h != "" {
		roots = append(roots, filepath.Join(h, ".local", "lib", "python3*", "site-packages"))
	}
	roots = append(roots, "/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages", "/opt/conda/lib/python3*/site-packages")
	for _, r := range roots {
		found, _ := filepath.Glob(filepath.Join(r, "nvidia", "*", "lib"))
		dirs = append(dirs, found...)
	}
	if c := getenv("CUDA_HOME"); c != "" {
		dirs = append(dirs, filepath.Join(c, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	var out []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// candidates are the files to try for a library whose sonames match
// pattern (libcublas.so.*): those in dirs, newest version first, then the
// bare sonames for the dynamic loader's search.
func candidates(dirs []string, pattern string, sonames []string) []string {
	var out []string
	for _, d := range dirs {
		found, _ := filepath.Glob(filepath.Join(d, pattern))
		slices.SortFunc(found, func(a, b string) int { return compareVersions(b, a) })
		out = append(out, found...)
	}
	return append(out, sonames...)
}

// compareVersions orders library file names by the numbers after ".so."
// (libcudnn.so.9 after libcudnn.so.8; libcublas.so.12.4.5 after .so.12).
func compareVersions(a, b string) int {
	va, vb := soVersion(a), soVersion(b)
	for i := range min(len(va), len(vb)) {
		if va[i] != vb[i] {
			return va[i] - vb[i]
		}
	}
	return len(va) - len(vb)
}

func soVersion(name string) []int {
	_, v, ok := strings.Cut(filepath.Base(name), ".so.")
	if !ok {
		return nil
	}
	var out []int
	for _, f := range strings.Split(v, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		out = append(out, n)
	}
	return out
}
