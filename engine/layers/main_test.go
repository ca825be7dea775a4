package layers

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs every test twice where oneDNN is available: with
// convolutions on oneDNN, then on im2col and GEMM, so both engines are held
// to the same checks.
func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 || !dnnlReady() {
		os.Exit(code)
	}
	fmt.Println("layers: again without oneDNN")
	dnnlOff = true
	os.Exit(m.Run())
}
