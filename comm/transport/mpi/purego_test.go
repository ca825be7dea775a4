//go:build purego

package mpi

import (
	"strings"
	"testing"
)

func TestPuregoRefuses(t *testing.T) {
	if _, err := World(); err == nil || !strings.Contains(err.Error(), "purego") {
		t.Fatalf("World in a purego build: %v, want an error naming purego", err)
	}
}
