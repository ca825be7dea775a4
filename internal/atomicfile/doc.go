// Package atomicfile writes a file so that it appears whole or not at
// all: the bytes go to a temporary file beside the destination (same
// folder, so the same file system), which is given its permissions,
// synced, closed and renamed over the destination, and the folder is
// synced so the rename survives a crash. On an error before the rename
// the temporary file is removed and the destination is left as it was;
// only a failure to sync the folder is reported with the file in place.
//
//	err := atomicfile.WriteFile(path, b, 0o644)
//	err = atomicfile.Write(path, 0o600, func(w io.Writer) error { return encode(w, st) })
//	err = atomicfile.WriteByName(path, 0o644, func(tmp string) error { return libWrite(tmp) })
//
// It is the one temp-file-and-rename writer of dsgd: snapshots
// (training/checkpoint, caffe/caffemodel's .caffemodel, .solverstate and
// their HDF5 pair), mean files (data), HDF5 outputs (data), upgraded
// prototxt (caffe/caffedef) and plots (cmd/internal/report).
//
// The temporary file is named TempPattern(path) (".NAME.tmp" and a random
// suffix), so a reader listing the folder can tell, and remove, those a
// killed write left behind (training/checkpoint's CleanTemps).
//
// The permissions are set exactly (the process's umask does not apply),
// as the copies this package replaced did. Errors are those of the os
// package, which name the temporary file; callers wrap them with the
// destination's path.
//
// Like everything in internal, it imports no dsgd package.
package atomicfile
