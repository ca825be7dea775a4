//go:build !purego

package caffemodel

/*
#cgo pkg-config: hdf5
#include <stdlib.h>
#include <hdf5.h>

static void cm_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }
static hid_t cm_create(const char *p) { return H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); }
static hid_t cm_open(const char *p) { return H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT); }

// cm_group opens the group name of loc, creating it when it is missing.
static hid_t cm_group(hid_t loc, const char *name) {
	htri_t e = H5Lexists(loc, name, H5P_DEFAULT);
	if (e < 0) return -1;
	if (e > 0) return H5Gopen2(loc, name, H5P_DEFAULT);
	return H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

// cm_gopen opens an existing group: -2 when there is no link of that name.
static hid_t cm_gopen(hid_t loc, const char *name) {
	if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return -2;
	return H5Gopen2(loc, name, H5P_DEFAULT);
}

static hid_t cm_dopen(hid_t loc, const char *name) {
	if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return -2;
	return H5Dopen2(loc, name, H5P_DEFAULT);
}

// cm_write writes a dataset of type t with the given dimensions (a
// scalar for rank 0) from buf.
static int cm_write(hid_t loc, const char *name, hid_t t, int rank, const hsize_t *dims, const void *buf) {
	hid_t s = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims, NULL);
	if (s < 0) return -1;
	hid_t d = H5Dcreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Sclose(s);
	if (d < 0) return -1;
	herr_t r = H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
	if (H5Dclose(d) < 0) return -1;
	return r < 0 ? -1 : 0;
}

static int cm_write_float(hid_t loc, const char *name, int rank, const hsize_t *dims, const float *buf) {
	return cm_write(loc, name, H5T_NATIVE_FLOAT, rank, dims, buf);
}

static int cm_write_int(hid_t loc, const char *name, int v) {
	hsize_t one = 1;
	return cm_write(loc, name, H5T_NATIVE_INT, 1, &one, &v);
}

// cm_write_string writes s as a scalar fixed-length, null-terminated
// ASCII string (what HDF5's H5LTmake_dataset_string makes).
static int cm_write_string(hid_t loc, const char *name, const char *s, size_t len) {
	hid_t t = H5Tcopy(H5T_C_S1);
	if (t < 0) return -1;
	if (H5Tset_size(t, len + 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) { H5Tclose(t); return -1; }
	int r = cm_write(loc, name, t, 0, NULL, s);
	H5Tclose(t);
	return r;
}

static long long cm_nlinks(hid_t g) {
	H5G_info_t info;
	if (H5Gget_info(g, &info) < 0) return -1;
	return (long long)info.nlinks;
}

// cm_link_name is the name of link i of g in name order (the order
// Caffe's hdf5_get_name_by_idx visits them).
static long long cm_link_name(hid_t g, hsize_t i, char *buf, size_t size) {
	return (long long)H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, buf, size, H5P_DEFAULT);
}

static int cm_dims(hid_t d, hsize_t *dims, int max) {
	hid_t s = H5Dget_space(d);
	if (s < 0) return -1;
	int n = H5Sget_simple_extent_ndims(s);
	if (n > 0 && n <= max) H5Sget_simple_extent_dims(s, dims, NULL);
	H5Sclose(s);
	return n;
}

// cm_class is the dataset's type class; for a string, -3 when its
// length is variable, else its size in *size.
static int cm_class(hid_t d, size_t *size) {
	hid_t t = H5Dget_type(d);
	if (t < 0) return -1;
	int c = H5Tget_class(t);
	*size = H5Tget_size(t);
	if (c == H5T_STRING && H5Tis_variable_str(t) > 0) c = -3;
	H5Tclose(t);
	return c;
}

static int cm_read_float(hid_t d, float *buf) {
	return H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ? -1 : 0;
}

static int cm_read_int(hid_t d, int *buf) {
	return H5Dread(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ? -1 : 0;
}

static int cm_read_string(hid_t d, char *buf, size_t size) {
	hid_t t = H5Tcopy(H5T_C_S1);
	if (t < 0) return -1;
	if (H5Tset_size(t, size) < 0) { H5Tclose(t); return -1; }
	herr_t r = H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
	H5Tclose(t);
	return r < 0 ? -1 : 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"dsgd/internal/atomicfile"
	"dsgd/internal/hdf5lock"
)

// cstr is s as a C string the caller frees.
func cstr(s string) *C.char { return C.CString(s) }

func free(p *C.char) { C.free(unsafe.Pointer(p)) }

// h5Name checks that a layer name can name an HDF5 group.
func h5Name(name string) error {
	if name == "" || name == "." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("layer name %q cannot name an HDF5 group (HDF5 reads '/' as a path; Caffe's Net::ToHDF5 fails on it too): write this net with snapshot_format BINARYPROTO", name)
	}
	return nil
}

// writeH5 creates path through a temporary file beside it, calls fill
// with the open file and renames the result into place: a failure leaves
// no partial file.
func writeH5(path string, fill func(f C.hid_t) error) error {
	err := atomicfile.WriteByName(path, 0o644, func(name string) error {
		hdf5lock.Lock()
		defer hdf5lock.Unlock()
		C.cm_quiet()
		cname := cstr(name)
		f := C.cm_create(cname)
		free(cname)
		if f < 0 {
			return errCreate
		}
		err := fill(f)
		if C.H5Fclose(f) < 0 && err == nil {
			err = errors.New("closing the file failed")
		}
		if err != nil {
			return fmt.Errorf("%w%s", err, diskFull(filepath.Dir(path)))
		}
		return nil
	})
	switch {
	case errors.Is(err, errCreate):
		return fmt.Errorf("caffemodel: cannot create HDF5 file %s", path)
	case err != nil:
		return fmt.Errorf("caffemodel: writing %s: %w", path, err)
	}
	return nil
}

// errCreate is writeH5's "libhdf5 could not create the file".
var errCreate = errors.New("cannot create")

// diskFull says why an HDF5 write most likely failed when the file system
// of dir is (nearly) full: libhdf5's errors carry no errno, so "cannot
// write dataset 0" would otherwise be all a user learns. "" when there is
// room.
func diskFull(dir string) string {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return ""
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	if free >= 1<<20 {
		return ""
	}
	return fmt.Sprintf(" (no space left on device: %d bytes free on the file system of %s)", free, dir)
}

// writeBlob writes b as the float dataset name of loc, with b's shape.
func writeBlob(loc C.hid_t, name string, b Blob) error {
	dims := make([]C.hsize_t, len(b.Shape)+1)
	for i, d := range b.Shape {
		dims[i] = C.hsize_t(d)
	}
	var buf *C.float
	if len(b.Data) > 0 {
		buf = (*C.float)(unsafe.Pointer(&b.Data[0]))
	} else {
		var zero C.float
		buf = &zero
	}
	cname := cstr(name)
	defer free(cname)
	if C.cm_write_float(loc, cname, C.int(len(b.Shape)), &dims[0], buf) < 0 {
		return fmt.Errorf("cannot write dataset %s", name)
	}
	return nil
}

// WriteHDF5 writes n to path as Caffe's HDF5 model (.caffemodel.h5), the
// layout of Caffe's Net::ToHDF5: a group /data/LAYER for every layer, in
// which dataset "j" (float32, the blob's shape) holds blob j where the
// layer owns it; a blob shared with an earlier layer (Shared) is written
// only in its owner's group. Layers that share a name share one group.
func WriteHDF5(path string, n *Net) error {
	for _, l := range n.Layers {
		if err := h5Name(l.Name); err != nil {
			return fmt.Errorf("caffemodel: %s: %w", path, err)
		}
	}
	return writeH5(path, func(f C.hid_t) error {
		cdata := cstr("data")
		data := C.cm_group(f, cdata)
		free(cdata)
		if data < 0 {
			return errors.New("cannot create group /data")
		}
		defer C.H5Gclose(data)
		for _, l := range n.Layers {
			cname := cstr(l.Name)
			g := C.cm_group(data, cname)
			free(cname)
			if g < 0 {
				return fmt.Errorf("cannot create group /data/%s", l.Name)
			}
			for j, b := range l.Blobs {
				if b.Shared || b.Absent {
					continue
				}
				if err := writeBlob(g, strconv.Itoa(j), b); err != nil {
					C.H5Gclose(g)
					return fmt.Errorf("layer %q: %w", l.Name, err)
				}
			}
			C.H5Gclose(g)
		}
		return nil
	})
}

// openH5 opens path for reading under the libhdf5 lock and returns its size (which
// bounds what a dataset may claim); the caller closes f and unlocks.
func openH5(path, what string) (C.hid_t, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return -1, 0, fmt.Errorf("%s: %w", what, err)
	}
	hdf5lock.Lock()
	C.cm_quiet()
	cpath := cstr(path)
	f := C.cm_open(cpath)
	free(cpath)
	if f < 0 {
		hdf5lock.Unlock()
		return -1, 0, fmt.Errorf("%s is not a readable HDF5 file (corrupt or truncated?)", path)
	}
	return f, st.Size(), nil
}

// linkNames lists the links of group g in name order.
func linkNames(g C.hid_t) ([]string, error) {
	n := int64(C.cm_nlinks(g))
	if n < 0 {
		return nil, errors.New("cannot list the group")
	}
	if n > 1<<20 {
		return nil, fmt.Errorf("%d links in one group", n)
	}
	out := make([]string, 0, n)
	buf := make([]byte, 1024)
	for i := range n {
		m := int64(C.cm_link_name(g, C.hsize_t(i), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))))
		if m < 0 {
			return nil, errors.New("cannot read a link's name")
		}
		if m >= int64(len(buf)) {
			buf = make([]byte, m+1)
			if C.cm_link_name(g, C.hsize_t(i), (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))) < 0 {
				return nil, errors.New("cannot read a link's name")
			}
		}
		out = append(out, string(buf[:m]))
	}
	return out, nil
}

// readBlob reads the numeric dataset name of loc as float32 with its
// shape. fileSize bounds the allocation.
func readBlob(loc C.hid_t, name string, fileSize int64) (Blob, error) {
	var b Blob
	cname := cstr(name)
	d := C.cm_dopen(loc, cname)
	free(cname)
	if d < 0 {
		return b, errors.New("not a dataset")
	}
	defer C.H5Dclose(d)
	var size C.size_t
	if c := C.cm_class(d, &size); c != C.H5T_FLOAT && c != C.H5T_INTEGER {
		return b, errors.New("not a numeric dataset")
	}
	var cdims [maxDims]C.hsize_t
	nd := int(C.cm_dims(d, &cdims[0], maxDims))
	if nd < 0 || nd > maxDims {
		return b, fmt.Errorf("%d dimensions, at most %d", nd, maxDims)
	}
	count := 1
	b.Shape = make([]int, nd)
	for i := range b.Shape {
		if cdims[i] > 1<<40 {
			return b, fmt.Errorf("dimension %d is too large", uint64(cdims[i]))
		}
		b.Shape[i] = int(cdims[i])
		if b.Shape[i] != 0 && count > (1<<40)/b.Shape[i] {
			return b, fmt.Errorf("shape %s is too large", shapeString(b.Shape))
		}
		count *= b.Shape[i]
	}
	if int64(count) > 64*fileSize+1<<20 {
		return b, fmt.Errorf("shape %s claims more values than the %d-byte file can hold", shapeString(b.Shape), fileSize)
	}
	b.Data = make([]float32, count)
	if count > 0 && C.cm_read_float(d, (*C.float)(unsafe.Pointer(&b.Data[0]))) < 0 {
		return b, errors.New("cannot read it as float (corrupt or truncated file?)")
	}
	return b, nil
}

// ReadHDF5 reads Caffe's HDF5 model (.caffemodel.h5, Net::ToHDF5's
// layout) at path: the layers of /data in name order, each with its
// datasets "0", "1", ...; a blob the file lacks (a shared one) is Absent.
func ReadHDF5(path string) (*Net, error) {
	f, fileSize, err := openH5(path, "caffemodel")
	if err != nil {
		return nil, err
	}
	defer hdf5lock.Unlock()
	defer C.H5Fclose(f)
	cdata := cstr("data")
	data := C.cm_gopen(f, cdata)
	free(cdata)
	if data < 0 {
		return nil, fmt.Errorf("%s has no group /data: not a Caffe HDF5 model (.caffemodel.h5)?", path)
	}
	defer C.H5Gclose(data)
	names, err := linkNames(data)
	if err != nil {
		return nil, fmt.Errorf("%s: /data: %v (corrupt file?)", path, err)
	}
	n := &Net{HDF5: true}
	for _, name := range names {
		cname := cstr(name)
		g := C.cm_gopen(data, cname)
		free(cname)
		if g < 0 {
			return nil, fmt.Errorf("%s: /data/%s is not a group (a Caffe HDF5 model holds one group per layer)", path, name)
		}
		l, err := readLayer(g, name, fileSize)
		C.H5Gclose(g)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		n.Layers = append(n.Layers, l)
	}
	if len(n.Layers) == 0 {
		return nil, fmt.Errorf("%s holds no layers: not a Caffe HDF5 model (.caffemodel.h5)?", path)
	}
	return n, nil
}

// readLayer reads the blobs of the layer group g.
func readLayer(g C.hid_t, name string, fileSize int64) (Layer, error) {
	l := Layer{Name: name}
	links, err := linkNames(g)
	if err != nil {
		return l, fmt.Errorf("/data/%s: %v (corrupt file?)", name, err)
	}
	byIndex := map[int]Blob{}
	most := -1
	for _, ln := range links {
		j, err := strconv.Atoi(ln)
		if err != nil || j < 0 || j >= 1<<16 || strconv.Itoa(j) != ln {
			return l, fmt.Errorf("/data/%s/%s: not a blob index (a layer's datasets are named 0, 1, ...)", name, ln)
		}
		b, err := readBlob(g, ln, fileSize)
		if err != nil {
			return l, fmt.Errorf("layer %q blob %d (/data/%s/%s): %v", name, j, name, ln, err)
		}
		byIndex[j] = b
		most = max(most, j)
	}
	for j := 0; j <= most; j++ {
		b, ok := byIndex[j]
		if !ok {
			b.Absent = true
		}
		l.Blobs = append(l.Blobs, b)
	}
	return l, nil
}

// WriteStateHDF5 writes st to path as Caffe's HDF5 solver state
// (.solverstate.h5, SGDSolver::SnapshotSolverStateToHDF5's layout): int
// datasets iter and current_step of one element, the string learned_net,
// and group history with the history blobs as datasets "0", "1", ...
func WriteStateHDF5(path string, st *State) error {
	if st.Iter > math.MaxInt32 || st.CurrentStep > math.MaxInt32 {
		return fmt.Errorf("caffemodel: %s: iteration %d does not fit Caffe's int", path, st.Iter)
	}
	return writeH5(path, func(f C.hid_t) error {
		for _, v := range []struct {
			name string
			v    int
		}{{"iter", st.Iter}, {"current_step", st.CurrentStep}} {
			cname := cstr(v.name)
			r := C.cm_write_int(f, cname, C.int(v.v))
			free(cname)
			if r < 0 {
				return fmt.Errorf("cannot write %s", v.name)
			}
		}
		cname, cval := cstr("learned_net"), cstr(st.LearnedNet)
		r := C.cm_write_string(f, cname, cval, C.size_t(len(st.LearnedNet)))
		free(cname)
		free(cval)
		if r < 0 {
			return errors.New("cannot write learned_net")
		}
		chist := cstr("history")
		h := C.cm_group(f, chist)
		free(chist)
		if h < 0 {
			return errors.New("cannot create group /history")
		}
		defer C.H5Gclose(h)
		for i, b := range st.History {
			if err := writeBlob(h, strconv.Itoa(i), b); err != nil {
				return fmt.Errorf("history: %w", err)
			}
		}
		return nil
	})
}

// readInt reads the one-element int dataset name of f.
func readInt(f C.hid_t, name string) (int, error) {
	cname := cstr(name)
	d := C.cm_dopen(f, cname)
	free(cname)
	if d == -2 {
		return 0, fmt.Errorf("no dataset %q", name)
	}
	if d < 0 {
		return 0, fmt.Errorf("cannot open dataset %q", name)
	}
	defer C.H5Dclose(d)
	var size C.size_t
	if C.cm_class(d, &size) != C.H5T_INTEGER {
		return 0, fmt.Errorf("dataset %q is not an integer", name)
	}
	var cdims [maxDims]C.hsize_t
	nd := int(C.cm_dims(d, &cdims[0], maxDims))
	count := uint64(1)
	for i := 0; i < nd && i < maxDims && count == 1; i++ {
		count *= uint64(cdims[i])
	}
	if nd < 0 || nd > maxDims || count != 1 {
		return 0, fmt.Errorf("dataset %q holds more than one value", name)
	}
	var v C.int
	if C.cm_read_int(d, &v) < 0 {
		return 0, fmt.Errorf("cannot read dataset %q (corrupt or truncated file?)", name)
	}
	return int(v), nil
}

// readString reads the fixed-length string dataset name of f; ok is
// false when f has no such dataset.
func readString(f C.hid_t, name string) (s string, ok bool, err error) {
	cname := cstr(name)
	d := C.cm_dopen(f, cname)
	free(cname)
	if d == -2 {
		return "", false, nil
	}
	if d < 0 {
		return "", true, fmt.Errorf("cannot open dataset %q", name)
	}
	defer C.H5Dclose(d)
	var size C.size_t
	switch C.cm_class(d, &size) {
	case C.H5T_STRING:
	case -3:
		return "", true, fmt.Errorf("dataset %q is a variable-length string; Caffe writes and reads a fixed-length one", name)
	default:
		return "", true, fmt.Errorf("dataset %q is not a string", name)
	}
	if size == 0 || size > 1<<16 {
		return "", true, fmt.Errorf("dataset %q: string of %d bytes", name, size)
	}
	buf := make([]byte, size+1)
	if C.cm_read_string(d, (*C.char)(unsafe.Pointer(&buf[0])), size+1) < 0 {
		return "", true, fmt.Errorf("cannot read dataset %q (corrupt or truncated file?)", name)
	}
	if i := strings.IndexByte(string(buf), 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), true, nil
}

// ReadStateHDF5 reads Caffe's HDF5 solver state (.solverstate.h5) at
// path, as SGDSolver::RestoreSolverStateFromHDF5 does: iter and
// current_step are required, learned_net optional, history blobs "0" to
// "N-1" in order.
func ReadStateHDF5(path string) (*State, error) {
	f, fileSize, err := openH5(path, "solverstate")
	if err != nil {
		return nil, err
	}
	defer hdf5lock.Unlock()
	defer C.H5Fclose(f)
	st := &State{}
	if st.Iter, err = readInt(f, "iter"); err != nil {
		return nil, fmt.Errorf("%s: %v: not a Caffe HDF5 solver state (.solverstate.h5)?", path, err)
	}
	if st.Iter < 0 {
		return nil, fmt.Errorf("%s: negative iteration %d", path, st.Iter)
	}
	if st.LearnedNet, _, err = readString(f, "learned_net"); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if st.CurrentStep, err = readInt(f, "current_step"); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	chist := cstr("history")
	h := C.cm_gopen(f, chist)
	free(chist)
	if h < 0 {
		return nil, fmt.Errorf("%s has no group /history", path)
	}
	defer C.H5Gclose(h)
	names, err := linkNames(h)
	if err != nil {
		return nil, fmt.Errorf("%s: /history: %v (corrupt file?)", path, err)
	}
	for i := range names {
		b, err := readBlob(h, strconv.Itoa(i), fileSize)
		if err != nil {
			return nil, fmt.Errorf("%s: history blob %d (/history/%d): %v", path, i, i, err)
		}
		st.History = append(st.History, b)
	}
	return st, nil
}

// HDF5Error says why this build cannot read or write HDF5 models: nil,
// since it has libhdf5.
func HDF5Error() error { return nil }
