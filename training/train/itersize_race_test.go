//go:build race

package train

// lockFreeSchemes is empty under the race detector: see
// itersize_norace_test.go.
var lockFreeSchemes []string
