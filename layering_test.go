package dsgd_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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

// groups says, for each subsystem folder at the root, which other
// groups (or packages of them) its packages may import; a package may
// also import its own group's packages, except where noted. This is the
// layering of docs/architecture.md, bottom to top:
//
//   - protocol: the pure cores (the schemes, the center, the
//     accumulator), which import no dsgd package, not even each other;
//   - internal: process leaves (launcher, spawn, the HDF5 lock) and the
//     run settings, which import no dsgd package;
//   - engine: tensors, layers, nets, solvers;
//   - data: the loaders and databases, which read Caffe's Datum
//     (caffe/caffepb) and nothing else of caffe;
//   - caffe: Caffe's formats, turned into the engine's and data's types;
//   - comm: transports, collectives, shared memory, the wire codecs;
//   - servers: the parameter server and ShmCaffe's buffer server;
//   - simulator: the schemes in virtual time, and its calibration;
//     simulator/study, what dsgd simulate runs, is the one package of it
//     that reads a Caffe job (training/job) and writes a trace
//     (training/timeline);
//   - training: a run on this process's ranks; training/job, the Caffe
//     job a run is assembled from, is the one package of it that
//     imports training/train;
//   - cmd: the commands, which may import anything (cmd/internal holds
//     what only they use).
var groups = map[string][]string{
	"protocol":  nil,
	"internal":  nil,
	"engine":    {"internal"},
	"data":      {"engine", "internal", "caffe/caffepb"},
	"caffe":     {"engine", "data", "internal"},
	"comm":      {"engine/tensor", "internal"},
	"servers":   {"protocol", "comm", "engine/tensor", "internal"},
	"simulator": {"protocol", "comm", "engine", "internal"},
	"training":  {"protocol", "comm", "engine", "data", "caffe", "internal"},
}

// within reports whether package p (a path under the module) is pkg or
// one of its subpackages.
func within(p, pkg string) bool { return p == pkg || strings.HasPrefix(p, pkg+"/") }

// TestLayering enforces the layering of STYLE.md between the groups
// above: the pure cores import no other dsgd package, and the schemes no
// clock, network or file system; the leaves of internal import no dsgd
// package; nothing but the commands and training/job (which assembles
// a run from a Caffe job) imports training/train.
func TestLayering(t *testing.T) {
	if _, err := os.Stat("go.mod"); err != nil {
		t.Skip("not at the module root")
	}
	all := imports(t)
	// Leaves about processes: detecting an external launcher, and
	// spawning our own ranks; internal/hdf5lock holds the process's one
	// libhdf5 lock; runcfg and netns hold values and namespaces.
	for dir, ims := range all {
		group := strings.Split(dir, "/")[0]
		if dir == "." {
			continue
		}
		allowed, known := groups[group]
		if !known && group != "cmd" {
			t.Errorf("%s is in no group of the layering: place it under one of %v or cmd, or add its group here", dir, keys(groups))
			continue
		}
		for p := range ims {
			in, ok := strings.CutPrefix(p, "dsgd/")
			switch {
			case dir == "protocol/scheme" && (p == "time" || p == "net" || p == "os"):
				t.Errorf("protocol/scheme imports %s: schemes count in iterations and events, not time, sockets or files", p)
			case !ok:
			case group == "protocol" || group == "internal":
				t.Errorf("%s imports %s: %s packages import no dsgd package", dir, p, group)
			case within(in, "training/train") && group != "cmd" && dir != "training/job":
				t.Errorf("%s imports %s, the training job above it", dir, p)
			case group == "cmd" || within(in, group):
			case dir == "simulator/study" && (in == "training/job" || in == "training/timeline"):
			default:
				ok := false
				for _, a := range allowed {
					ok = ok || within(in, a)
				}
				if !ok {
					t.Errorf("%s imports %s: the %s group may import only %v", dir, p, group, allowed)
				}
			}
		}
	}
	for _, d := range []string{"protocol/scheme", "training/node", "internal/spawn", "cmd/internal/commbench", "internal/hdf5lock", "engine/model"} {
		if _, ok := all[d]; !ok {
			t.Fatalf("found no package %s: the walk missed the tree (%d packages)", d, len(all))
		}
	}
	if len(all["training/node"]) == 0 || len(all["cmd/internal/commbench"]) == 0 {
		t.Fatalf("found no imports for training/node or commbench: the walk missed the tree")
	}
}

// keys returns m's keys, sorted.
func keys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
	if !callers["caffe/caffemodel"] || !callers["data"] {
		t.Fatalf("found libhdf5 callers %v; want at least caffemodel and data: the walk missed them", callers)
	}
	for dir := range callers {
		if !all[dir]["dsgd/internal/hdf5lock"] {
			t.Errorf("%s calls libhdf5 but does not import dsgd/internal/hdf5lock: take hdf5lock.Lock around its calls", dir)
		}
	}
}
