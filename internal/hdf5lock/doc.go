// Package hdf5lock owns the one lock every call into libhdf5 in the
// process is made under.
//
// Debian builds libhdf5 without its thread-safe option: the library
// keeps global state (its error stack, its open-object and free lists)
// with no locking of its own, so two goroutines inside it at once, even
// on different files, can corrupt it. Every package that calls libhdf5
// through cgo (caffemodel, data) takes this lock around each sequence of
// calls, from the first H5 call to the last close; a package with a
// mutex of its own would not exclude the others. The layering test
// checks that every package whose cgo preamble includes hdf5.h imports
// this package.
//
// The package is a leaf: it imports no dsgd package and no C library,
// so it builds the same under the purego tag.
package hdf5lock
