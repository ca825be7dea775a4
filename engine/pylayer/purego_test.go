//go:build purego

package pylayer_test

import (
	"strings"
	"testing"

	"dsgd/engine/layers"
	"dsgd/engine/pylayer"
)

// TestPuregoRefuses: under the purego tag a Python layer is refused,
// saying why, when it is built.
func TestPuregoRefuses(t *testing.T) {
	_, err := (&pylayer.Config{Module: "m", Layer: "L"}).Build(layers.Context{})
	if err == nil || !strings.Contains(err.Error(), "purego") || !strings.Contains(err.Error(), "Python layers") {
		t.Fatalf("Build = %v; want the purego refusal", err)
	}
	if pylayer.Available() == nil {
		t.Fatal("Available() = nil under purego")
	}
}
