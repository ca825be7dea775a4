//go:build purego

package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHDF5PuregoRefuses(t *testing.T) {
	list := filepath.Join(t.TempDir(), "l.txt")
	os.WriteFile(list, []byte("x.h5\n"), 0o644)
	if _, err := ReadHDF5List(list, "data", "label"); err == nil || !strings.Contains(err.Error(), "-tags purego") {
		t.Fatalf("ReadHDF5List under purego: %v", err)
	}
}
