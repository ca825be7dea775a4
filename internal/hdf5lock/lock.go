package hdf5lock

import "sync"

// mu is the process's one libhdf5 lock.
var mu sync.Mutex

// Lock takes the libhdf5 lock; call it before the first H5 call of a
// sequence (opening or creating a file, quieting the error stack).
func Lock() { mu.Lock() }

// Unlock releases the libhdf5 lock, after the sequence's last H5 call
// (the file's close).
func Unlock() { mu.Unlock() }
