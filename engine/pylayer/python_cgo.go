//go:build !purego

package pylayer

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

// CPython's stable-ABI entry points, looked up in the libpython dsgd
// opened (dlsym): no Python header is needed to build. PyObject is opaque
// here; Py_ssize_t is ssize_t; PyGILState_STATE is an int-sized enum.
typedef void PyObject;
static void (*p_Py_InitializeEx)(int);
static int (*p_Py_IsInitialized)(void);
static const char *(*p_Py_GetVersion)(void);
static void *(*p_PyEval_SaveThread)(void);
static int (*p_PyGILState_Ensure)(void);
static void (*p_PyGILState_Release)(int);
static PyObject *(*p_Py_CompileString)(const char *, const char *, int);
static PyObject *(*p_PyImport_ExecCodeModule)(const char *, PyObject *);
static PyObject *(*p_PyObject_GetAttrString)(PyObject *, const char *);
static PyObject *(*p_PyObject_CallObject)(PyObject *, PyObject *);
static PyObject *(*p_PyTuple_New)(ssize_t);
static int (*p_PyTuple_SetItem)(PyObject *, ssize_t, PyObject *);
static PyObject *(*p_PyBytes_FromStringAndSize)(const char *, ssize_t);
static int (*p_PyBytes_AsStringAndSize)(PyObject *, char **, ssize_t *);
static void (*p_Py_DecRef)(PyObject *);
static void (*p_PyErr_Fetch)(PyObject **, PyObject **, PyObject **);
static PyObject *(*p_PyObject_Str)(PyObject *);
static const char *(*p_PyUnicode_AsUTF8AndSize)(PyObject *, ssize_t *);

#define BIND(name) if (!(*(void **)&p_##name = dlsym(h, #name))) return #name;

// dsgd_py_bind looks every entry point up in h; it returns the first
// missing one's name, NULL when all are there.
static const char *dsgd_py_bind(void *h) {
	BIND(Py_InitializeEx) BIND(Py_IsInitialized) BIND(Py_GetVersion)
	BIND(PyEval_SaveThread) BIND(PyGILState_Ensure) BIND(PyGILState_Release)
	BIND(Py_CompileString) BIND(PyImport_ExecCodeModule) BIND(PyObject_GetAttrString)
	BIND(PyObject_CallObject) BIND(PyTuple_New) BIND(PyTuple_SetItem)
	BIND(PyBytes_FromStringAndSize) BIND(PyBytes_AsStringAndSize) BIND(Py_DecRef)
	BIND(PyErr_Fetch) BIND(PyObject_Str) BIND(PyUnicode_AsUTF8AndSize)
	return NULL;
}

static const char *dsgd_py_version(void) { return p_Py_GetVersion(); }

// dsgd_py_error takes the pending Python exception (the GIL held) and
// returns its text, malloc'd.
static char *dsgd_py_error(const char *what) {
	PyObject *t = NULL, *v = NULL, *tb = NULL;
	p_PyErr_Fetch(&t, &v, &tb);
	const char *msg = "(no exception set)";
	PyObject *s = NULL;
	if (v || t) {
		s = p_PyObject_Str(v ? v : t);
		if (s) {
			ssize_t n;
			const char *u = p_PyUnicode_AsUTF8AndSize(s, &n);
			if (u) msg = u;
		}
	}
	size_t len = strlen(what) + strlen(msg) + 3;
	char *out = malloc(len);
	if (out) {
		strcpy(out, what);
		strcat(out, ": ");
		strcat(out, msg);
	}
	if (s) p_Py_DecRef(s);
	if (t) p_Py_DecRef(t);
	if (v) p_Py_DecRef(v);
	if (tb) p_Py_DecRef(tb);
	// Whatever failed above left its own exception pending: drop it.
	p_PyErr_Fetch(&t, &v, &tb);
	if (t) p_Py_DecRef(t);
	if (v) p_Py_DecRef(v);
	if (tb) p_Py_DecRef(tb);
	return out;
}

static PyObject *dispatch;

// dsgd_py_start initialises the interpreter without its signal handlers,
// runs src as the module "caffe" (registered in sys.modules) and keeps its
// _dsgd_dispatch; it then releases the GIL, which the calling thread holds
// after Py_InitializeEx. On failure it returns the error text, malloc'd.
static char *dsgd_py_start(const char *src) {
	int ours = !p_Py_IsInitialized();
	int g = 0;
	if (ours) p_Py_InitializeEx(0);
	else g = p_PyGILState_Ensure();
	char *err = NULL;
	PyObject *code = p_Py_CompileString(src, "<dsgd caffe module>", 257);
	PyObject *mod = NULL;
	if (!code) err = dsgd_py_error("compiling dsgd's caffe module");
	else {
		mod = p_PyImport_ExecCodeModule("caffe", code);
		p_Py_DecRef(code);
		if (!mod) err = dsgd_py_error("running dsgd's caffe module");
		else {
			dispatch = p_PyObject_GetAttrString(mod, "_dsgd_dispatch");
			if (!dispatch) err = dsgd_py_error("dsgd's caffe module");
			p_Py_DecRef(mod);
		}
	}
	if (ours) p_PyEval_SaveThread();
	else p_PyGILState_Release(g);
	return err;
}

// dsgd_py_call calls _dsgd_dispatch(req) holding the GIL and returns its
// bytes in *out (malloc'd, *outn long); on a Python-level failure it
// returns 1 with the error text in *out.
static int dsgd_py_call(const char *req, ssize_t n, char **out, ssize_t *outn) {
	int g = p_PyGILState_Ensure();
	int rc = 0;
	*out = NULL;
	*outn = 0;
	PyObject *b = p_PyBytes_FromStringAndSize(req, n);
	PyObject *args = b ? p_PyTuple_New(1) : NULL;
	PyObject *r = NULL;
	if (args) {
		p_PyTuple_SetItem(args, 0, b); // steals b
		b = NULL;
		r = p_PyObject_CallObject(dispatch, args);
		p_Py_DecRef(args);
	}
	if (b) p_Py_DecRef(b);
	char *s;
	ssize_t sn;
	if (!r) {
		*out = dsgd_py_error("dsgd's Python bridge");
		rc = 1;
	} else if (p_PyBytes_AsStringAndSize(r, &s, &sn) != 0) {
		*out = dsgd_py_error("dsgd's Python bridge: answer");
		rc = 1;
	} else {
		*out = malloc(sn > 0 ? sn : 1);
		if (*out) memcpy(*out, s, sn);
		*outn = sn;
	}
	if (r) p_Py_DecRef(r);
	if (*out && rc) *outn = strlen(*out);
	p_PyGILState_Release(g);
	return rc;
}
*/
import "C"

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"dsgd/internal/dlopen"
)

//go:embed caffe.py
var caffeSource string

// interp is the process's one embedded interpreter.
var interp struct {
	once    sync.Once
	err     error
	version string
	lib     string
}

// Libraries are the libpython sonames tried in order when DSGD_LIBPYTHON
// is not set: the newest CPython first.
var Libraries = []string{
	"libpython3.13.so.1.0", "libpython3.12.so.1.0", "libpython3.11.so.1.0",
	"libpython3.10.so.1.0", "libpython3.9.so.1.0", "libpython3.8.so.1.0",
}

var pyVersion = regexp.MustCompile(`^(\d+)\.(\d+)`)

// start opens libpython and initialises it once (Py_InitializeEx(0): no
// signal handlers, so dsgd keeps its own), with dsgd's caffe module and
// numpy; every later call returns the first one's error.
func start() error {
	interp.once.Do(func() { interp.err = open() })
	return interp.err
}

func open() error {
	names := Libraries
	if v := os.Getenv("DSGD_LIBPYTHON"); v != "" {
		names = []string{v}
	}
	var tried string
	bind := func(h unsafe.Pointer) string {
		if miss := C.dsgd_py_bind(h); miss != nil {
			return "no " + C.GoString(miss) + " in it"
		}
		return ""
	}
	// One name at a time, so that the one that opened is known. Global:
	// numpy's and the standard library's extension modules resolve their
	// Py* symbols against it.
	for _, n := range names {
		if h, errs := dlopen.First([]string{n}, dlopen.Global, bind); h != nil {
			interp.lib = n
			break
		} else if len(errs) > 0 {
			tried += "\n  " + n + ": " + errs[0]
		}
	}
	if interp.lib == "" {
		return fmt.Errorf("pylayer: Python layers need CPython's shared library (apt-get install libpython3.11 python3-numpy, or set DSGD_LIBPYTHON to a libpython3.X.so.1.0); none opened:%s", tried)
	}
	interp.version = C.GoString(C.dsgd_py_version())
	m := pyVersion.FindStringSubmatch(interp.version)
	if m == nil {
		return fmt.Errorf("pylayer: %s reports version %q, not CPython 3.X", interp.lib, interp.version)
	}
	if err := checkStdlib(m[1] + "." + m[2]); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cs := C.CString(caffeSource)
	defer C.free(unsafe.Pointer(cs))
	if e := C.dsgd_py_start(cs); e != nil {
		defer C.free(unsafe.Pointer(e))
		return fmt.Errorf("pylayer: starting Python %s: %s", interp.version, C.GoString(e))
	}
	if _, err := callPy([]byte(`{"op":"hello"}`)); err != nil {
		return fmt.Errorf("pylayer: Python %s: %w", strings.Fields(interp.version)[0], err)
	}
	return nil
}

// checkStdlib refuses a Python whose standard library cannot be found,
// which Py_InitializeEx would answer by aborting the process.
func checkStdlib(ver string) error {
	var dirs []string
	if home := os.Getenv("PYTHONHOME"); home != "" {
		dirs = append(dirs, filepath.Join(strings.Split(home, ":")[0], "lib", "python"+ver))
	} else {
		if filepath.IsAbs(interp.lib) {
			dirs = append(dirs, filepath.Join(filepath.Dir(filepath.Dir(interp.lib)), "lib", "python"+ver))
		}
		dirs = append(dirs, "/usr/lib/python"+ver, "/usr/local/lib/python"+ver, "/usr/lib64/python"+ver)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "encodings", "__init__.py")); err == nil {
			return nil
		}
	}
	return fmt.Errorf("pylayer: Python %s's standard library (encodings/) is in none of %s; install python%s (or set PYTHONHOME)", ver, strings.Join(dirs, ", "), ver)
}

// callPy sends one request to dsgd's caffe module and returns its answer,
// holding the GIL on a locked OS thread for the call. req's memory and any
// blob memory the request names (pinned by the caller) are read and
// written only during the call.
func callPy(req []byte) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out *C.char
	var n C.ssize_t
	rc := C.dsgd_py_call((*C.char)(unsafe.Pointer(unsafe.SliceData(req))), C.ssize_t(len(req)), &out, &n)
	if out == nil {
		return nil, errors.New("pylayer: out of memory in the Python bridge")
	}
	defer C.free(unsafe.Pointer(out))
	b := C.GoBytes(unsafe.Pointer(out), C.int(n))
	if rc != 0 {
		return nil, errors.New(string(b))
	}
	return b, nil
}

// Available reports whether Python layers can run here: libpython opens,
// starts, and imports numpy. The error says what is missing.
func Available() error { return start() }
