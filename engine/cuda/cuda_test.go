package cuda

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseIDs(t *testing.T) {
	for _, tc := range []struct {
		spec string
		n    int
		want []int
		err  string
	}{
		{"0", 1, []int{0}, ""},
		{"0,1", 2, []int{0, 1}, ""},
		{" 1 , 0 ", 2, []int{1, 0}, ""},
		{"all", 3, []int{0, 1, 2}, ""},
		{"all", 0, nil, "no GPU was found"},
		{"1", 1, nil, "GPU 1 out of range: this machine has 1 GPU(s)"},
		{"0", 0, nil, "GPU 0 out of range: this machine has 0 GPU(s)"},
		{"0,0", 2, nil, "GPU 0 given twice"},
		{"-1", 2, nil, "want all, or device indices"},
		{"gpu0", 2, nil, "want all, or device indices"},
		{"", 2, nil, "want all, or device indices"},
	} {
		got, err := ParseIDs(tc.spec, tc.n)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("ParseIDs(%q, %d) = %v, %v; want %v", tc.spec, tc.n, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseIDs(%q, %d) = %v, %v; want an error with %q", tc.spec, tc.n, got, err, tc.err)
		}
	}
}

// TestLibrarySearch: DSGD_CUDA_LIBS first, then the NVIDIA wheels'
// nvidia/*/lib folders of the virtual environment, each folder's files
// newest version first, then the bare sonames.
func TestLibrarySearch(t *testing.T) {
	root := t.TempDir()
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	own := mk("own", "libcudnn.so.8")
	site := filepath.Join("venv", "lib", "python3.12", "site-packages", "nvidia")
	c9 := mk(site, "cudnn", "lib", "libcudnn.so.9")
	c912 := mk(site, "cudnn", "lib", "libcudnn.so.9.12.0")
	cub := mk(site, "cublas", "lib", "libcublas.so.13")
	env := map[string]string{"DSGD_CUDA_LIBS": filepath.Join(root, "own") + ":" + filepath.Join(root, "missing"), "VIRTUAL_ENV": filepath.Join(root, "venv")}
	dirs := libDirs(func(k string) string { return env[k] })
	if len(dirs) < 3 || dirs[0] != filepath.Join(root, "own") || slices.Contains(dirs, filepath.Join(root, "missing")) {
		t.Fatalf("dirs %v: want %s first and no missing folder", dirs, filepath.Join(root, "own"))
	}
	got := candidates(dirs, "libcudnn.so.*", []string{"libcudnn.so.9"})
	want := []string{own, c912, c9}
	if len(got) < 4 || !slices.Equal(got[:3], want) || got[len(got)-1] != "libcudnn.so.9" {
		t.Fatalf("candidates %v; want %v, ..., then libcudnn.so.9", got, want)
	}
	if got := candidates(dirs, "libcublas.so.*", nil); len(got) == 0 || got[0] != cub {
		t.Fatalf("cuBLAS candidates %v; want %s first", got, cub)
	}
}

// TestProbe: on a machine without a GPU (CI) Probe says what is missing; on one with a GPU it names every device and the
// driver's CUDA version.
func TestProbe(t *testing.T) {
	in, err := Probe()
	if err != nil {
		if m := err.Error(); !strings.Contains(m, "NVIDIA driver") && !strings.Contains(m, "purego") {
			t.Fatalf("Probe's error does not say what is missing: %v", err)
		}
		t.Logf("no GPU here: %v", err)
		return
	}
	if len(in.Devices) == 0 || in.Driver < 1000 {
		t.Fatalf("Probe found %+v: want devices and a driver version", in)
	}
	for i, d := range in.Devices {
		if d.Index != i || d.Name == "" || d.Memory <= 0 || d.Major < 1 {
			t.Errorf("device %d: %+v", i, d)
		}
		t.Log(d)
	}
	t.Logf("driver CUDA %s, cuBLAS %s, cuDNN %s, from %v", in.DriverVersion(), in.CUBLAS, in.CUDNN, in.Libs)
}
