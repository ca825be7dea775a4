// Package pytest readies the embedded Python for a test of Python
// layers, or skips the test saying why Python layers cannot run here (no
// libpython, no numpy, the purego build); with DSGD_REQUIRE_PYTHON=1 that
// fails the test instead.
package pytest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"dsgd/engine/pylayer"
)

var once sync.Once

// Need puts the folder dir (relative to the test's package) on PYTHONPATH
// before Python starts, once per process, and skips t unless Python
// layers can run.
func Need(t testing.TB, dir string) {
	t.Helper()
	once.Do(func() {
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		os.Setenv("PYTHONPATH", abs)
	})
	if err := pylayer.Available(); err != nil {
		if os.Getenv("DSGD_REQUIRE_PYTHON") == "1" {
			t.Fatalf("Python layers cannot run here: %v", err)
		}
		t.Skipf("Python layers cannot run here: %v", err)
	}
}
