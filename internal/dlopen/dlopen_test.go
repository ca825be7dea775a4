//go:build !purego

package dlopen_test

import (
	"strings"
	"testing"
	"unsafe"

	"dsgd/internal/dlopen"
)

// TestFirst: a name that does not load and a library bind refuses are
// each reported, in order, and the next name is tried; the first library
// bind accepts is returned.
func TestFirst(t *testing.T) {
	refuse := func(unsafe.Pointer) string { return "no such entry point" }
	accept := func(unsafe.Pointer) string { return "" }
	h, errs := dlopen.First([]string{"libdsgd-no-such-library.so.0", "libc.so.6"}, dlopen.Local, refuse)
	if h != nil || len(errs) != 2 || !strings.Contains(errs[0], "libdsgd-no-such-library.so.0") || errs[1] != "no such entry point" {
		t.Fatalf("First = %v, %q; want nil and why each of the two names failed", h, errs)
	}
	h, errs = dlopen.First([]string{"libdsgd-no-such-library.so.0", "libc.so.6"}, dlopen.Global, accept)
	if h == nil || errs != nil {
		t.Fatalf("First = %v, %q; want libc's handle", h, errs)
	}
	if h, errs := dlopen.First(nil, dlopen.Local, accept); h != nil || errs != nil {
		t.Fatalf("First of no names = %v, %q; want nil, nil", h, errs)
	}
}
