package harness_test

import (
	"testing"
	"testing/synctest"

	"github.com/cockroachdb/datadriven"

	"dsgd/training/harness"
)

// TestScripts runs the golden scripts under testdata: each file in a
// synctest bubble of its own, its commands against real ranks over the
// scripted transport. `go test ./training/harness -rewrite` regenerates
// their output.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		synctest.Test(t, func(t *testing.T) {
			var h harness.Harness
			defer h.Close()
			datadriven.RunTest(t, path, h.Cmd)
		})
	})
}
