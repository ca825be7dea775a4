//go:build !purego

package tensor

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// OpenBLAS is opened at run time rather than linked, so that dsgd can pick
// the kernel the CPU deserves before OpenBLAS's own choice sticks, and so
// that a machine without OpenBLAS still runs (on the pure-Go GEMM). The
// prototypes are OpenBLAS's stable C ABI (CBLAS enums are ints).
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                         const float *, int, float, float *, int);
typedef char *(*str_fn)(void);
typedef void (*void_fn)(void);
typedef void (*int_fn)(int);

static sgemm_fn p_sgemm;
static str_fn p_corename, p_config;
static void_fn p_dyn_init, p_dyn_quit;
static int_fn p_set_threads;

// dsgd_blas_bind resolves OpenBLAS's entry points in the library h. It
// returns NULL on success, else what is missing, and changes nothing
// unless it succeeds.
static const char *dsgd_blas_bind(void *h) {
	sgemm_fn f = (sgemm_fn)dlsym(h, "cblas_sgemm");
	if (!f) return "cblas_sgemm not found in the library";
	p_sgemm = f;
	p_corename = (str_fn)dlsym(h, "openblas_get_corename");
	p_config = (str_fn)dlsym(h, "openblas_get_config");
	p_set_threads = (int_fn)dlsym(h, "openblas_set_num_threads");
	// Present only in DYNAMIC_ARCH builds (Debian's): they let the kernel
	// be chosen again after the library's constructor chose one.
	p_dyn_init = (void_fn)dlsym(h, "gotoblas_dynamic_init");
	p_dyn_quit = (void_fn)dlsym(h, "gotoblas_dynamic_quit");
	if (p_set_threads) p_set_threads(1);
	return NULL;
}

static const char *dsgd_blas_corename(void) { return p_corename ? p_corename() : ""; }
static const char *dsgd_blas_config(void) { return p_config ? p_config() : ""; }

// dsgd_blas_force re-runs OpenBLAS's kernel selection with
// OPENBLAS_CORETYPE=core, then removes the variable again so that child
// processes make their own choice. It returns 0 when it cannot.
static int dsgd_blas_force(const char *core) {
	if (!p_dyn_init || !p_dyn_quit) return 0;
	setenv("OPENBLAS_CORETYPE", core, 1);
	p_dyn_quit();
	p_dyn_init();
	unsetenv("OPENBLAS_CORETYPE");
	if (p_set_threads) p_set_threads(1);
	return 1;
}

// dsgd_cpu_level is the widest vector ISA the CPU and OS support for
// single-precision FMA: 3 AVX-512 (F, BW, DQ, VL, CD), 2 AVX2+FMA, 1 AVX,
// 0 SSE only. GCC's builtins check the OS's XSAVE support too.
static int dsgd_cpu_level(void) {
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512cd"))
		return 3;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
	if (__builtin_cpu_supports("avx")) return 1;
	return 0;
}

static void dsgd_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                       const float *b, int ldb, float beta, float *c, int ldc) {
	p_sgemm(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
*/
import "C"

import (
	"os"
	"strings"
	"unsafe"

	"dsgd/engine/cpuinfo"
	"dsgd/internal/dlopen"
)

var openblasLoaded bool

// openblasNames are the sonames tried, in order: Debian's libopenblas0
// provides the first; the second is what a source build installs.
var openblasNames = []string{"libopenblas.so.0", "libopenblas.so"}

func init() {
	level := int(C.dsgd_cpu_level())
	// Under an ISA cap (ONEDNN_MAX_CPU_ISA, as dsgd bench --isa sets for
	// its children) the kernel must stay under the cap too: the CPU's
	// level is taken as the cap's, so a narrower OPENBLAS_CORETYPE that
	// matches it stands rather than being widened to the CPU's.
	capped := ""
	if l, ok, err := cpuinfo.EnvCap(); ok && err == nil {
		if c := isaLevel(cpuinfo.EffectiveISA(l)); c < level {
			level, capped = c, l.String()
		}
	}
	gemmInfo = loadOpenBLAS(openblasNames, level, os.Getenv("OPENBLAS_CORETYPE"))
	if capped != "" {
		gemmInfo.CPU += " under ONEDNN_MAX_CPU_ISA=" + capped
	}
	Backend = gemmInfo.Library
}

// isaLevel is dsgd_cpu_level's count for an ISA level: 3 AVX-512, 2
// AVX2+FMA, 1 AVX, 0 SSE.
func isaLevel(l cpuinfo.ISA) int {
	switch {
	case l >= cpuinfo.AVX512Core:
		return 3
	case l >= cpuinfo.AVX2:
		return 2
	case l == cpuinfo.AVX:
		return 1
	}
	return 0
}

// loadOpenBLAS opens OpenBLAS and, when its kernel is narrower than the
// CPU's widest vector ISA (a CPU model newer than the library's table), has
// it select the kernel for that ISA instead.
func loadOpenBLAS(names []string, level int, userCore string) GemmInfo {
	info := GemmInfo{CPU: cpuLevelName(level)}
	h, errs := dlopen.First(names, dlopen.Local, func(h unsafe.Pointer) string { return C.GoString(C.dsgd_blas_bind(h)) })
	if h == nil {
		info.Library, info.Kernel = "gonum", "pure Go"
		info.Warning = "OpenBLAS could not be loaded (" + strings.Join(errs, "; ") +
			"): GEMM falls back to the pure-Go kernel, several times slower; install it with apt-get install libopenblas0"
		return info
	}
	openblasLoaded = true
	info.Library = "openblas"
	info.Version = C.GoString(C.dsgd_blas_config())
	picked := C.GoString(C.dsgd_blas_corename())
	info.Kernel = picked
	userLevel := coreLevel(userCore)
	switch {
	case userCore != "" && (userLevel < 0 || userLevel >= level):
		info.Note = "OPENBLAS_CORETYPE=" + userCore + " from the environment"
	case coreLevel(picked) < level:
		why := "OpenBLAS chose " + picked + " for this CPU, which its table does not know"
		if userCore != "" {
			why = "OPENBLAS_CORETYPE=" + userCore + " in the environment is narrower than this CPU"
		}
		if now, ok := forceCore(levelCore[level]); ok {
			info.Kernel = now
			info.Note = why + "; dsgd selected " + now + " from the CPU's features and checked it against a reference GEMM"
		} else {
			forceCore(picked)
			info.Note = why + "; dsgd's attempt to select " + levelCore[level] + " failed (" + now + ")"
		}
	}
	if lv := coreLevel(info.Kernel); lv >= 0 && lv < level {
		info.Warning = "OpenBLAS runs its " + info.Kernel + " kernel (" + cpuLevelName(lv) + ") on a CPU with " + info.CPU +
			": GEMM is several times slower than it could be; unset OPENBLAS_CORETYPE, or set OPENBLAS_CORETYPE=" + levelCore[level] + ", or install a newer OpenBLAS"
	}
	return info
}

// forceCore has OpenBLAS select core and checks the result against a
// float64 reference GEMM. It returns the core in use and whether it is
// core and correct; on failure it says what went wrong instead.
func forceCore(core string) (string, bool) {
	cs := C.CString(core)
	ok := C.dsgd_blas_force(cs) != 0
	C.free(unsafe.Pointer(cs))
	if !ok {
		return "this OpenBLAS build cannot change its kernel", false
	}
	now := C.GoString(C.dsgd_blas_corename())
	if !strings.EqualFold(now, core) {
		return "OpenBLAS ran " + now, false
	}
	if err := checkGemm64(sgemm); err != nil {
		return now + " computed wrong results: " + err.Error(), false
	}
	return now, true
}

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !openblasLoaded {
		gonumSgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	var ta, tb C.int
	if transA {
		ta = 1
	}
	if transB {
		tb = 1
	}
	C.dsgd_sgemm(ta, tb, C.int(m), C.int(n), C.int(k),
		C.float(alpha), (*C.float)(unsafe.Pointer(&a[0])), C.int(lda),
		(*C.float)(unsafe.Pointer(&b[0])), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

// cpuLevelName names an ISA level (see levelCore).
func cpuLevelName(level int) string {
	switch level {
	case 3:
		return "AVX-512"
	case 2:
		return "AVX2+FMA"
	case 1:
		return "AVX"
	}
	return "SSE"
}
