//go:build purego

package db

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPuregoRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []Backend{LMDB, LevelDB} {
		_, err := Create(filepath.Join(dir, b.String()), b)
		if err == nil || !strings.Contains(err.Error(), "-tags purego") {
			t.Errorf("%v: Create under purego: %v", b, err)
		}
	}
}
