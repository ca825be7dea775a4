// Package simd owns dsgd's hand-vectorised float32 kernels, kept apart
// from package tensor because Go does not allow assembly in a package that
// uses cgo. Each kernel has a portable Go version, used under the purego
// tag and on other architectures, and tests that pin the assembly to it
// bit for bit. Callers use them through package tensor.
package simd
