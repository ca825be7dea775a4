//go:build !purego

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

// The few entry points Probe calls, looked up by name: the driver API's
// and the libraries' version queries. Every CUDA call returns 0 on
// success.
typedef int (*cu_int_fn)(unsigned int);
typedef int (*cu_intp_fn)(int *);
typedef int (*cu_dev_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cublas_prop_fn)(int, int *);
typedef size_t (*cudnn_ver_fn)(void);

static void *sym(void *h, const char *name) { return h ? dlsym(h, name) : NULL; }

static const char *dsgd_cu_bind(void *h) {
	static const char *need[] = {"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet",
		"cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute",
		"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuCtxSetCurrent", "cuCtxSynchronize",
		"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", NULL};
	for (int i = 0; need[i]; i++) {
		if (!dlsym(h, need[i])) return need[i];
	}
	return "";
}

static int dsgd_cu_init(void *h) { return ((cu_int_fn)sym(h, "cuInit"))(0); }
static int dsgd_cu_driver(void *h, int *v) { return ((cu_intp_fn)sym(h, "cuDriverGetVersion"))(v); }
static int dsgd_cu_count(void *h, int *n) { return ((cu_intp_fn)sym(h, "cuDeviceGetCount"))(n); }

// dsgd_cu_device fills device i's name, memory and compute capability
// (attributes 75 and 76: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
// and _MINOR).
static int dsgd_cu_device(void *h, int i, char *name, int len, size_t *mem, int *major, int *minor) {
	int dev, r;
	if ((r = ((cu_dev_fn)sym(h, "cuDeviceGet"))(&dev, i))) return r;
	if ((r = ((cu_name_fn)sym(h, "cuDeviceGetName"))(name, len, dev))) return r;
	if ((r = ((cu_mem_fn)sym(h, "cuDeviceTotalMem_v2"))(mem, dev))) return r;
	if ((r = ((cu_attr_fn)sym(h, "cuDeviceGetAttribute"))(major, 75, dev))) return r;
	return ((cu_attr_fn)sym(h, "cuDeviceGetAttribute"))(minor, 76, dev);
}

// dsgd_cu_attr reads attribute attr (a CUdevice_attribute) of device i.
static int dsgd_cu_attr(void *h, int i, int attr, int *v) {
	int dev, r;
	if ((r = ((cu_dev_fn)sym(h, "cuDeviceGet"))(&dev, i))) return r;
	return ((cu_attr_fn)sym(h, "cuDeviceGetAttribute"))(v, attr, dev);
}

static const char *dsgd_cublas_bind(void *h) {
	static const char *need[] = {"cublasGetProperty", "cublasCreate_v2", "cublasDestroy_v2", "cublasSetMathMode", "cublasSgemm_v2", NULL};
	for (int i = 0; need[i]; i++) {
		if (!dlsym(h, need[i])) return need[i];
	}
	return "";
}

// dsgd_cublas_version: libraryPropertyType MAJOR_VERSION 0, MINOR 1,
// PATCH 2.
static int dsgd_cublas_version(void *h, int *v) {
	cublas_prop_fn f = (cublas_prop_fn)sym(h, "cublasGetProperty");
	for (int i = 0; i < 3; i++) {
		int r = f(i, &v[i]);
		if (r) return r;
	}
	return 0;
}

static const char *dsgd_cudnn_bind(void *h) { return dlsym(h, "cudnnGetVersion") ? "" : "cudnnGetVersion"; }
static size_t dsgd_cudnn_version(void *h) { return ((cudnn_ver_fn)sym(h, "cudnnGetVersion"))(); }
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"dsgd/internal/dlopen"
)

var (
	probeOnce sync.Once
	probed    *Info
	probeErr  error
	// libcuda, libcublas and libcudnn are the libraries Probe opened
	// (nil: not found), for the GPU's calls (gpu_cgo.go).
	libcuda, libcublas, libcudnn unsafe.Pointer
)

// Probe finds the GPUs and the CUDA libraries, once; later calls return
// the first call's result. Its error says what is missing: the driver
// (no libcuda.so.1), a driver that starts no device, or no GPU; how to
// go on (the CPU) is the caller's to say.
func Probe() (*Info, error) {
	probeOnce.Do(func() { probed, probeErr = probe(os.Getenv) })
	return probed, probeErr
}

func probe(getenv func(string) string) (*Info, error) {
	h, errs := dlopen.First([]string{"libcuda.so.1", "libcuda.so"}, dlopen.Global, func(h unsafe.Pointer) string {
		return C.GoString(C.dsgd_cu_bind(h))
	})
	if h == nil {
		return nil, fmt.Errorf("no NVIDIA driver: libcuda.so.1 could not be loaded (%s); install the NVIDIA driver", strings.Join(errs, "; "))
	}
	libcuda = h
	if r := C.dsgd_cu_init(h); r != 0 {
		return nil, fmt.Errorf("the NVIDIA driver did not start (cuInit: CUDA error %d; 100 means no device, 999 an unknown error: see nvidia-smi)", int(r))
	}
	in := &Info{}
	var v, n C.int
	if r := C.dsgd_cu_driver(h, &v); r != 0 {
		return nil, fmt.Errorf("cuDriverGetVersion: CUDA error %d", int(r))
	}
	in.Driver = int(v)
	if r := C.dsgd_cu_count(h, &n); r != 0 {
		return nil, fmt.Errorf("cuDeviceGetCount: CUDA error %d", int(r))
	}
	if n == 0 {
		return nil, fmt.Errorf("the NVIDIA driver (CUDA %s) sees no GPU", in.DriverVersion())
	}
	for i := range int(n) {
		var name [256]C.char
		var mem C.size_t
		var major, minor C.int
		if r := C.dsgd_cu_device(h, C.int(i), &name[0], C.int(len(name)), &mem, &major, &minor); r != 0 {
			return nil, fmt.Errorf("GPU %d: CUDA error %d reading its name, memory or compute capability", i, int(r))
		}
		in.Devices = append(in.Devices, Device{Index: i, Name: C.GoString(&name[0]), Memory: int64(mem), Major: int(major), Minor: int(minor)})
	}
	dirs := libDirs(getenv)
	in.CUBLAS, libcublas = loadLib(in, dirs, "libcublas.so.*", []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
		func(h unsafe.Pointer) string { return C.GoString(C.dsgd_cublas_bind(h)) },
		func(h unsafe.Pointer) string {
			var v [3]C.int
			if r := C.dsgd_cublas_version(h, &v[0]); r != 0 {
				return fmt.Sprintf("cublasGetProperty: error %d", int(r))
			}
			return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
		})
	in.CUDNN, libcudnn = loadLib(in, dirs, "libcudnn.so.*", []string{"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"},
		func(h unsafe.Pointer) string { return C.GoString(C.dsgd_cudnn_bind(h)) },
		func(h unsafe.Pointer) string {
			v := int(C.dsgd_cudnn_version(h)) // 9.1.0 is 90100 (8.x: 8600)
			if v >= 90000 {
				return fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100)
			}
			return fmt.Sprintf("%d.%d.%d", v/1000, v%1000/100, v%100)
		})
	return in, nil
}

// loadLib opens the first of a library's candidates that bind accepts
// and returns its version and handle, or "not found (...)" and nil,
// recording where it was loaded from in in.Libs.
func loadLib(in *Info, dirs []string, pattern string, sonames []string, bind func(unsafe.Pointer) string, version func(unsafe.Pointer) string) (string, unsafe.Pointer) {
	for _, c := range candidates(dirs, pattern, sonames) {
		h, _ := dlopen.First([]string{c}, dlopen.Global, bind)
		if h != nil {
			in.Libs = append(in.Libs, c)
			return version(h), h
		}
	}
	return fmt.Sprintf("not found (%s in DSGD_CUDA_LIBS, the NVIDIA wheels' nvidia/*/lib, the CUDA toolkit, or the loader's path)", pattern), nil
}

// Query reads device index's properties, in the order and with the
// labels of Caffe's device_query (its cudaDeviceProp fields, read here
// as the driver API's device attributes), then a few a user of a newer
// card asks for. Probe must have succeeded.
func Query(index int) ([]Property, error) {
	in, err := Probe()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(in.Devices) {
		return nil, fmt.Errorf("GPU %d out of range: this machine has %d GPU(s)", index, len(in.Devices))
	}
	d := in.Devices[index]
	attr := func(a int) (int, error) {
		var v C.int
		if r := C.dsgd_cu_attr(libcuda, C.int(index), C.int(a), &v); r != 0 {
			return 0, fmt.Errorf("GPU %d: cuDeviceGetAttribute(%d): CUDA error %d", index, a, int(r))
		}
		return int(v), nil
	}
	return queryProps(d, attr)
}
