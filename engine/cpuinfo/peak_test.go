package cpuinfo

import (
	"bufio"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// fma32 is x*y + a rounded once to float32, computed exactly.
func fma32(x, y, a float32) float32 {
	p := new(big.Float).SetPrec(256).SetFloat64(float64(x))
	p.Mul(p, new(big.Float).SetPrec(256).SetFloat64(float64(y)))
	p.Add(p, new(big.Float).SetPrec(256).SetFloat64(float64(a)))
	f, _ := p.Float32()
	return f
}

// mulAdd32 is x*y rounded to float32, then added to a and rounded again:
// what MULPS and ADDPS compute.
func mulAdd32(x, y, a float32) float32 {
	p := fma32(x, y, 0)
	return fma32(p, 1, a)
}

// TestKernelsCompute checks that each kernel does what its FLOP count
// claims: n fused multiply-adds on every lane of every accumulator, no
// more, no fewer, each lane its own.
func TestKernelsCompute(t *testing.T) {
	ks := Kernels()
	if len(ks) == 0 {
		t.Skipf("no kernel on this CPU or build (%v)", Detect())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range ks {
		t.Run(k.Name, func(t *testing.T) {
			size := k.Lanes * k.Accumulators
			// Exact arithmetic: lane i starts at i and gains x*y = 1/8 per
			// iteration, so after n iterations it holds i + n/8 exactly.
			for _, n := range []int{0, 1, 2, 7, 1000} {
				acc := make([]float32, size)
				for i := range acc {
					acc[i] = float32(i)
				}
				k.Run(n, 0.5, 0.25, acc)
				for i, v := range acc {
					if want := float32(i) + float32(n)/8; v != want {
						t.Fatalf("n=%d: lane %d = %v, want %v", n, i, v, want)
					}
				}
			}
			// Rounding: random values, against an exact fused
			// multiply-add rounded once per step.
			x, y := float32(rng.NormFloat64()), float32(rng.NormFloat64())
			acc := make([]float32, size)
			for i := range acc {
				acc[i] = float32(rng.NormFloat64() * 100)
			}
			want := append([]float32(nil), acc...)
			const n = 37
			for i := range want {
				for range n {
					if k.Op == "FMA" {
						want[i] = fma32(x, y, want[i])
					} else {
						want[i] = mulAdd32(x, y, want[i])
					}
				}
			}
			k.Run(n, x, y, acc)
			for i := range acc {
				if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
					t.Fatalf("lane %d = %v, want %v (%s, %d steps of %v*%v)", i, acc[i], want[i], k.Op, n, x, y)
				}
			}
		})
	}
}

func TestKernelRunPanicsOnWrongLength(t *testing.T) {
	ks := Kernels()
	if len(ks) == 0 {
		t.Skip("no kernel")
	}
	defer func() {
		if recover() == nil {
			t.Error("Run with a short acc did not panic")
		}
	}()
	ks[0].Run(1, 1, 1, make([]float32, 3))
}

func TestBestKernel(t *testing.T) {
	t.Setenv("ONEDNN_MAX_CPU_ISA", "")
	t.Setenv("DNNL_MAX_CPU_ISA", "")
	k, err := BestKernel()
	switch l := CPUISA(); {
	case len(Kernels()) == 0:
		if !errors.Is(err, ErrNoKernel) {
			t.Errorf("no kernels but BestKernel() error %v", err)
		}
	case err != nil:
		t.Fatal(err)
	case l >= AVX512Core && (k.Lanes != 16 || k.Name != "AVX-512 ZMM"):
		t.Errorf("%v CPU, best kernel %+v", l, k)
	case (l == AVX2 || l == AVX2VNNI) && (k.Lanes != 8 || k.Name != "AVX2 YMM"):
		t.Errorf("%v CPU, best kernel %+v", l, k)
	}
}

// TestKernelAt: the kernel at each level the CPU has is that level's (the
// YMM FMA kernel at AVX2 on an AVX-512 CPU, the mul+add kernels below
// AVX2); a level above the CPU gets the CPU's own; BestKernel follows
// ONEDNN_MAX_CPU_ISA.
func TestKernelAt(t *testing.T) {
	if len(Kernels()) == 0 {
		if _, err := KernelAt(AVX2); !errors.Is(err, ErrNoKernel) {
			t.Errorf("KernelAt without kernels: %v", err)
		}
		t.Skip("no kernels in this build")
	}
	want := map[ISA]string{SSE41: "SSE XMM mul+add", AVX: "AVX YMM mul+add", AVX2: "AVX2 YMM", AVX2VNNI: "AVX2 YMM",
		AVX512Core: "AVX-512 ZMM", AVX512CoreVNNI: "AVX-512 ZMM", AVX512CoreBF16: "AVX-512 ZMM", AVX512CoreAMX: "AVX-512 ZMM"}
	for l := SSE41; l < All; l++ {
		k, err := KernelAt(l)
		if err != nil {
			t.Fatalf("KernelAt(%v): %v", l, err)
		}
		if w := want[EffectiveISA(l)]; k.Name != w {
			t.Errorf("KernelAt(%v) on a %v CPU = %s, want %s", l, CPUISA(), k.Name, w)
		}
	}
	for _, env := range []string{"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("ONEDNN_MAX_CPU_ISA", "")
			t.Setenv("DNNL_MAX_CPU_ISA", "")
			t.Setenv(env, "sse41")
			if k, err := BestKernel(); err != nil || k.Name != "SSE XMM mul+add" {
				t.Errorf("BestKernel under %s=sse41: %+v, %v", env, k, err)
			}
		})
	}
}

func TestMeasurePeak(t *testing.T) {
	p, err := MeasurePeak(1, 2*time.Millisecond, 2)
	if len(Kernels()) == 0 {
		if !errors.Is(err, ErrNoKernel) {
			t.Errorf("error %v, want ErrNoKernel", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	// What is counted, not how fast: the FLOPs are threads x iterations x
	// accumulators x lanes x 2.
	k := p.Kernel
	if p.Threads != 1 || p.Trials != 2 || p.Iters <= 0 || p.Seconds <= 0 {
		t.Fatalf("peak %+v", p)
	}
	if want := float64(p.Iters) * float64(k.Accumulators*k.Lanes*2); p.FLOPs() != want {
		t.Errorf("FLOPs %v, want %v", p.FLOPs(), want)
	}
	if g := p.GFLOPS(); math.Abs(g-p.FLOPs()/p.Seconds/1e9) > 1e-9*g {
		t.Errorf("GFLOPS %v", g)
	}
	f := p.Formula()
	for _, s := range []string{"1 thread x", "iterations", k.Name, k.Op + " x", "best of 2", "GFLOP/s"} {
		if !strings.Contains(f, s) {
			t.Errorf("formula %q lacks %q", f, s)
		}
	}
}

func TestMeasurePeakBadArgs(t *testing.T) {
	k := Kernel{Name: "fake", Lanes: 1, Accumulators: 1, run: func(int, float32, float32, []float32) {}}
	for _, c := range []struct {
		threads, trials int
		runFor          time.Duration
	}{{0, 1, time.Millisecond}, {1, 0, time.Millisecond}, {1, 1, 0}, {1 << 20, 1, time.Millisecond}} {
		if _, err := measure(k, c.threads, c.runFor, c.trials); err == nil {
			t.Errorf("measure(%d threads, %v, %d trials) succeeded", c.threads, c.runFor, c.trials)
		}
	}
}

func TestModelName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.10GHz\nflags\t\t: fpu\n", "Intel(R) Xeon(R) CPU @ 2.10GHz"},
		{"processor\t: 0\nflags\t\t: fpu\n", ""},
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n\n" +
			"processor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: Other\nstepping\t: 0\n", "AMD EPYC (family 25 model 17 stepping 1)"},
		{"cpu family\t: 6\nmodel\t\t: 207\n", ""},
		{"", ""},
	} {
		if got := modelName(bufio.NewScanner(strings.NewReader(c.in))); got != c.want {
			t.Errorf("modelName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFeaturesString(t *testing.T) {
	if s := (Features{}).String(); s != "none" {
		t.Errorf("%q", s)
	}
	if s := (Features{AVX2: true, FMA: true, AVX512F: true}).String(); s != "avx2 fma avx512f" {
		t.Errorf("%q", s)
	}
}
