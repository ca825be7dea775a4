//go:build purego

package db

import (
	"os"
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
		_, err = CreateStaged(filepath.Join(dir, b.String()), b)
		if err == nil || !strings.Contains(err.Error(), "-tags purego") {
			t.Errorf("%v: CreateStaged under purego: %v", b, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("CreateStaged under purego left %d entries", len(ents))
	}
}
