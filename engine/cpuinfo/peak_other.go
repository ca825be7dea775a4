//go:build !amd64 || purego

package cpuinfo

import "fmt"

// Kernels lists the peak kernels this build can run: none, the kernels
// being amd64 assembly, left out of purego builds.
func Kernels() []Kernel { return nil }

// KernelAt returns ErrNoKernel: this build has no assembly kernels.
func KernelAt(l ISA) (Kernel, error) {
	return Kernel{}, fmt.Errorf("%w at %s: the kernels are amd64 assembly, left out of this build (purego tag or another architecture)", ErrNoKernel, l)
}
