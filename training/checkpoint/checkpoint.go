package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"hash/crc32"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"

	"dsgd/engine/tensor"
	"dsgd/internal/atomicfile"
)

const (
	magic = "DSGDSNAP"
	// version is the format written; every version from 1 is read.
	version = 2
	// maxState bounds the solver state a file may claim, so a corrupt
	// header cannot make Read allocate without limit.
	maxState = 1 << 34
	// MaxRun bounds the run configuration a snapshot may carry.
	MaxRun = 1 << 20
)

// Block names one parameter blob for the layout hash.
type Block struct {
	Name  string
	Shape tensor.Shape
}

// LayoutHash is the hash recorded in a snapshot: FNV-1a 64 over each
// block's name and dimensions.
func LayoutHash(blocks []Block) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	for _, b := range blocks {
		h.Write([]byte(b.Name))
		h.Write([]byte{0})
		for _, d := range b.Shape {
			binary.LittleEndian.PutUint64(buf[:], uint64(d))
			h.Write(buf[:])
		}
		h.Write([]byte{1})
	}
	return h.Sum64()
}

// State is what a snapshot holds.
type State struct {
	Iter   int
	Layout uint64
	Params []float32
	// Solver is the solver state as its WriteState produced it.
	Solver []byte
	// Run is the configuration of the run that wrote the snapshot, opaque
	// to this package (dsgd writes its flags as JSON), at most MaxRun
	// bytes; empty in a version 1 file.
	Run []byte
}

// CleanTemps removes the temporary files that writes of snapshots
// matching the glob pattern (a path such as "out/lenet_iter_*.dsgdsnap")
// left behind when killed mid-write, and returns their names. A run
// calls it before it starts writing its own.
func CleanTemps(pattern string) ([]string, error) {
	stale, err := filepath.Glob(filepath.Join(filepath.Dir(pattern), atomicfile.TempPattern(pattern)))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var removed []string
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return removed, fmt.Errorf("checkpoint: removing the stale %s: %w", p, err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// Write atomically writes st to path (see the package comment). The file
// is private to its owner (0600).
func Write(path string, st State) error {
	b, err := encodeChecked(st)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("checkpoint: writing snapshot %s: %w", path, err)
	}
	return nil
}

func encode(w io.Writer, st State) error {
	if len(st.Run) > MaxRun {
		return fmt.Errorf("checkpoint: run configuration of %d bytes, limit %d", len(st.Run), MaxRun)
	}
	var hdr [40]byte
	copy(hdr[0:8], magic)
	binary.LittleEndian.PutUint32(hdr[8:], version)
	binary.LittleEndian.PutUint64(hdr[16:], uint64(st.Iter))
	binary.LittleEndian.PutUint64(hdr[24:], st.Layout)
	binary.LittleEndian.PutUint64(hdr[32:], uint64(len(st.Params)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if err := writeFloats(w, st.Params); err != nil {
		return err
	}
	var m [8]byte
	binary.LittleEndian.PutUint64(m[:], uint64(len(st.Solver)))
	if _, err := w.Write(m[:]); err != nil {
		return err
	}
	if _, err := w.Write(st.Solver); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(m[:], uint64(len(st.Run)))
	if _, err := w.Write(m[:]); err != nil {
		return err
	}
	_, err := w.Write(st.Run)
	return err
}

func writeFloats(w io.Writer, x []float32) error {
	var buf [4096]byte
	for len(x) > 0 {
		n := min(len(x), len(buf)/4)
		for i, v := range x[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		if _, err := w.Write(buf[:4*n]); err != nil {
			return err
		}
		x = x[n:]
	}
	return nil
}

// Read reads and checks the snapshot at path.
func Read(path string) (State, error) {
	f, err := os.Open(path)
	if err != nil {
		return State{}, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return State{}, fmt.Errorf("checkpoint: %w", err)
	}
	st, err := Decode(bufio.NewReaderSize(f, 1<<20), fi.Size())
	if err != nil {
		return State{}, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return st, nil
}

// Decode reads a snapshot of size bytes from r, checking the magic, the
// version, every length against size, and the checksum.
func Decode(r io.Reader, size int64) (State, error) {
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	tr := io.TeeReader(r, crc)
	var hdr [40]byte
	if _, err := io.ReadFull(tr, hdr[:]); err != nil {
		return State{}, errors.New("not a dsgd snapshot: too short for the header")
	}
	if string(hdr[0:8]) != magic {
		return State{}, errors.New("not a dsgd snapshot: bad magic")
	}
	v := binary.LittleEndian.Uint32(hdr[8:])
	if v < 1 || v > version {
		return State{}, fmt.Errorf("snapshot format version %d; this dsgd reads versions 1 to %d", v, version)
	}
	st := State{Iter: int(binary.LittleEndian.Uint64(hdr[16:])), Layout: binary.LittleEndian.Uint64(hdr[24:])}
	n := binary.LittleEndian.Uint64(hdr[32:])
	if st.Iter < 0 || n > uint64(size)/4 {
		return State{}, fmt.Errorf("corrupt header: %d parameters do not fit in %d bytes", n, size)
	}
	raw := make([]byte, 4*n)
	if _, err := io.ReadFull(tr, raw); err != nil {
		return State{}, fmt.Errorf("truncated in the parameters: %w", err)
	}
	st.Params = make([]float32, n)
	for i := range st.Params {
		st.Params[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	var mb [8]byte
	if _, err := io.ReadFull(tr, mb[:]); err != nil {
		return State{}, fmt.Errorf("truncated before the solver state: %w", err)
	}
	m := binary.LittleEndian.Uint64(mb[:])
	if m > maxState || m > uint64(size) {
		return State{}, fmt.Errorf("corrupt header: solver state of %d bytes in a %d-byte file", m, size)
	}
	st.Solver = make([]byte, m)
	if _, err := io.ReadFull(tr, st.Solver); err != nil {
		return State{}, fmt.Errorf("truncated in the solver state: %w", err)
	}
	if v >= 2 {
		if _, err := io.ReadFull(tr, mb[:]); err != nil {
			return State{}, fmt.Errorf("truncated before the run configuration: %w", err)
		}
		k := binary.LittleEndian.Uint64(mb[:])
		if k > MaxRun || k > uint64(size) {
			return State{}, fmt.Errorf("corrupt header: run configuration of %d bytes in a %d-byte file", k, size)
		}
		st.Run = make([]byte, k)
		if _, err := io.ReadFull(tr, st.Run); err != nil {
			return State{}, fmt.Errorf("truncated in the run configuration: %w", err)
		}
	}
	want := crc.Sum32()
	var cb [4]byte
	if _, err := io.ReadFull(r, cb[:]); err != nil {
		return State{}, errors.New("truncated: checksum missing")
	}
	if got := binary.LittleEndian.Uint32(cb[:]); got != want {
		return State{}, fmt.Errorf("checksum mismatch (file %08x, computed %08x): the file is corrupt", got, want)
	}
	var extra [1]byte
	if k, _ := r.Read(extra[:]); k > 0 {
		return State{}, errors.New("trailing bytes after the checksum")
	}
	return st, nil
}

// Encode returns st in the snapshot format, checksum included (for tests
// and for sending a snapshot over a stream). A Run longer than MaxRun is
// dropped.
func Encode(st State) []byte {
	if len(st.Run) > MaxRun {
		st.Run = nil
	}
	b, _ := encodeChecked(st) // bytes.Buffer writes do not fail
	return b
}

func encodeChecked(st State) ([]byte, error) {
	var buf bytes.Buffer
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	if err := encode(io.MultiWriter(&buf, crc), st); err != nil {
		return nil, err
	}
	_ = binary.Write(&buf, binary.LittleEndian, crc.Sum32())
	return buf.Bytes(), nil
}

// ReadRun returns the run configuration recorded in the snapshot at path
// without reading its weights (nil for a version 1 file). It checks the
// lengths, not the checksum: Read does that when the weights are loaded.
func ReadRun(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	size := uint64(fi.Size())
	fail := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("checkpoint: %s: "+format, append([]any{path}, args...)...)
	}
	var hdr [40]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil || string(hdr[0:8]) != magic {
		return fail("not a dsgd snapshot")
	}
	v := binary.LittleEndian.Uint32(hdr[8:])
	if v < 1 || v > version {
		return fail("snapshot format version %d; this dsgd reads versions 1 to %d", v, version)
	}
	if v < 2 {
		return nil, nil
	}
	n := binary.LittleEndian.Uint64(hdr[32:])
	if n > size/4 {
		return fail("corrupt header: %d parameters do not fit in %d bytes", n, size)
	}
	var lb [8]byte
	off := int64(40 + 4*n)
	if _, err := f.ReadAt(lb[:], off); err != nil {
		return fail("truncated before the solver state")
	}
	m := binary.LittleEndian.Uint64(lb[:])
	if m > size {
		return fail("corrupt header: solver state of %d bytes in a %d-byte file", m, size)
	}
	off += 8 + int64(m)
	if _, err := f.ReadAt(lb[:], off); err != nil {
		return fail("truncated before the run configuration")
	}
	k := binary.LittleEndian.Uint64(lb[:])
	if k > MaxRun || k > size {
		return fail("corrupt header: run configuration of %d bytes in a %d-byte file", k, size)
	}
	run := make([]byte, k)
	if _, err := f.ReadAt(run, off+8); err != nil {
		return fail("truncated in the run configuration")
	}
	return run, nil
}
