package dsgd_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goFiles calls f with the path of every non-test .go file of the tree
// (not under testdata or hidden directories).
func goFiles(t *testing.T, f func(path string) error) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return f(path)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// imports maps each package directory to the packages its non-test
// files import.
func imports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	goFiles(t, func(path string) error {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if out[dir] == nil {
			out[dir] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[dir][p] = true
		}
		return nil
	})
	return out
}

// TestLayering enforces the package layering of STYLE.md: the pure cores
// (the schemes, the center, the accumulator) import no other dsgd
// package, and the schemes no clock, network, file system or model;
// nothing below the training job imports it; only the command imports
// the command or the communication benchmark; the leaves (launcher,
// spawn, internal/hdf5lock) import no dsgd package.
func TestLayering(t *testing.T) {
	if _, err := os.Stat("go.mod"); err != nil {
		t.Skip("not at the module root")
	}
	all := imports(t)
	pure := map[string]bool{"scheme": true, "center": true, "accum": true}
	// Leaves about processes: detecting an external launcher, and
	// spawning our own ranks.
	// internal/hdf5lock holds the process's one libhdf5 lock.
	leaf := map[string]bool{"launcher": true, "spawn": true, "internal/hdf5lock": true}
	below := []string{"scheme", "center", "accum", "node", "sim", "ps", "smb", "rpc", "redisstore",
		"collective", "transport", "tensor", "solver", "model", "data", "checkpoint", "wire", "metrics", "timeline",
		"spawn", "launcher", "commbench"}
	for dir, ims := range all {
		top := strings.Split(dir, "/")[0]
		for p := range ims {
			in := strings.TrimPrefix(p, "dsgd/")
			dsgd := strings.HasPrefix(p, "dsgd/")
			switch {
			case pure[dir] && dsgd:
				t.Errorf("%s imports %s: it is a pure core and imports no dsgd package", dir, p)
			case leaf[dir] && dsgd:
				t.Errorf("%s imports %s: it is a leaf and imports no dsgd package", dir, p)
			case dir == "scheme" && (p == "time" || p == "net" || p == "os"):
				t.Errorf("scheme imports %s: schemes count in iterations and events, not time, sockets or files", p)
			case dsgd && strings.HasPrefix(in, "cmd") && top != "cmd":
				t.Errorf("%s imports the command %s", dir, p)
			case dsgd && (in == "train" || in == "report"):
				for _, b := range below {
					if top == b {
						t.Errorf("%s imports %s, which is above it", dir, p)
					}
				}
			case dsgd && in == "sim" && top == "node":
				t.Errorf("node imports the simulator")
			case dsgd && in == "commbench" && top != "cmd":
				t.Errorf("%s imports the communication benchmark", dir)
			}
		}
	}
	if len(all["scheme"]) == 0 || len(all["node"]) == 0 || len(all["spawn"]) == 0 || len(all["commbench"]) == 0 || len(all["internal/hdf5lock"]) == 0 {
		t.Fatalf("found no imports for scheme or node: the walk missed the tree (%d packages)", len(all))
	}
}

// TestHDF5OneLock: every package that calls libhdf5 through cgo imports
// internal/hdf5lock, the one lock all such calls are made under (Debian's
// libhdf5 is not thread-safe, so a mutex per package would not exclude
// the other packages' calls).
func TestHDF5OneLock(t *testing.T) {
	if _, err := os.Stat("go.mod"); err != nil {
		t.Skip("not at the module root")
	}
	all := imports(t)
	callers := map[string]bool{}
	// Test files cannot use cgo: goFiles leaves them out.
	goFiles(t, func(path string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "#include <hdf5.h>") {
			callers[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if !callers["caffemodel"] || !callers["data"] {
		t.Fatalf("found libhdf5 callers %v; want at least caffemodel and data: the walk missed them", callers)
	}
	for dir := range callers {
		if !all[dir]["dsgd/internal/hdf5lock"] {
			t.Errorf("%s calls libhdf5 but does not import dsgd/internal/hdf5lock: take hdf5lock.Lock around its calls", dir)
		}
	}
}
