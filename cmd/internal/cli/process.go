package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
)

// Version is name followed by the module's version and the commit it was
// built from, as the Go toolchain recorded them in the binary, and the Go
// version.
func Version(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return name + " (no build information)"
	}
	v := name + " " + bi.Main.Version
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", with uncommitted changes"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" (commit %s of %s%s)", rev, at, dirty)
	}
	return v + ", " + bi.GoVersion
}

// StartCPUProfile writes a Go CPU profile of the whole command to path
// (read it with go tool pprof) until the returned stop is called; with no
// path it does nothing. A profile that cannot be written is a warning on
// stderr (its lines start with name, and say the variable that named the
// file, env): the run goes on without it.
func StartCPUProfile(path, name, env string, stderr io.Writer) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: warning: %s: %v; no profile is written\n", name, env, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "%s: warning: %s %s: %v\n", name, env, path, err)
		}
	}
}
