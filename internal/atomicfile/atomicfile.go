package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// TempPattern is the os.CreateTemp pattern of the temporary files of a
// write of path: "." + base name + ".tmp*", in path's folder.
func TempPattern(path string) string { return "." + filepath.Base(path) + ".tmp*" }

// WriteFile writes data to path with permissions perm, whole or not at all
// (see the package comment).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write calls write with a temporary file beside path and, when it
// returns nil, makes that file path with permissions perm (see the
// package comment). An error of write is returned as it is.
func Write(path string, perm fs.FileMode, write func(w io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), TempPattern(path))
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return rename(tmp, path)
}

// WriteByName is Write for writers that take a file name rather than an
// io.Writer (libhdf5): write gets the name of an empty temporary file
// beside path, which it may truncate or recreate; when it returns nil,
// that file becomes path with permissions perm.
func WriteByName(path string, perm fs.FileMode, write func(tmp string) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), TempPattern(path))
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if f, err = os.Open(tmp); err != nil {
		return err
	}
	err = f.Chmod(perm)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return rename(tmp, path)
}

// rename moves tmp over path and syncs their folder, so that the new
// entry survives a crash.
func rename(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir syncs the folder dir, so that an entry just renamed into it
// survives a crash. A file system that cannot sync a folder (EINVAL,
// ENOTSUP) is not an error: the files themselves were synced.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}
