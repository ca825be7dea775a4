//go:build !purego

package dlopen

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// dsgd_dlopen opens name, setting *err to dlerror's message when it
// cannot (dlerror is per thread, so it is read in the same call).
static void *dsgd_dlopen(const char *name, int global, const char **err) {
	void *h = dlopen(name, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
	if (!h) *err = dlerror();
	return h;
}

static void dsgd_dlclose(void *h) { dlclose(h); }
*/
import "C"

import "unsafe"

// Scope is whose lookups a library's symbols serve (dlopen's flags).
type Scope int

const (
	// Local: only lookups in the library's handle.
	Local Scope = iota
	// Global: the libraries opened after it too (Open MPI's components,
	// which it dlopens itself, resolve their symbols against libmpi's).
	Global
)

// First opens the first of names that loads and that bind accepts, and
// returns its handle. bind is given the handle, looks up the entry points
// the caller needs in it (dlsym, in the caller's C code), and returns ""
// when they are all there, else what is missing; a library it refuses is
// closed. First resolves every symbol at once (RTLD_NOW). It returns a nil
// handle when no name loads, and then, one for each name, why not.
func First(names []string, scope Scope, bind func(h unsafe.Pointer) string) (unsafe.Pointer, []string) {
	var errs []string
	global := C.int(0)
	if scope == Global {
		global = 1
	}
	for _, name := range names {
		cs := C.CString(name)
		var msg *C.char
		h := C.dsgd_dlopen(cs, global, &msg)
		C.free(unsafe.Pointer(cs))
		if h == nil {
			errs = append(errs, C.GoString(msg))
			continue
		}
		if why := bind(h); why != "" {
			C.dsgd_dlclose(h)
			errs = append(errs, why)
			continue
		}
		return h, nil
	}
	return nil, errs
}
