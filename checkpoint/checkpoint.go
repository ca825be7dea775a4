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

	"dsgd/tensor"
)

const (
	magic   = "DSGDSNAP"
	version = 1
	// maxState bounds the solver state a file may claim, so a corrupt
	// header cannot make Read allocate without limit.
	maxState = 1 << 34
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
}

// tempPattern is the pattern of Write's temporary files for path.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".tmp*" }

// CleanTemps removes the temporary files that writes of snapshots
// matching the glob pattern (a path such as "out/lenet_iter_*.dsgdsnap")
// left behind when killed mid-write, and returns their names. A run
// calls it before it starts writing its own.
func CleanTemps(pattern string) ([]string, error) {
	stale, err := filepath.Glob(filepath.Join(filepath.Dir(pattern), tempPattern(pattern)))
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

// Write atomically writes st to path (see the package comment).
func Write(path string, st State) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return fmt.Errorf("checkpoint: cannot write snapshot %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(Encode(st)); err != nil {
		return fmt.Errorf("checkpoint: writing %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("checkpoint: syncing %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("checkpoint: closing %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("checkpoint: renaming %s to %s: %w", tmp, path, err)
	}
	return nil
}

func encode(w io.Writer, st State) error {
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
	_, err := w.Write(st.Solver)
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
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != version {
		return State{}, fmt.Errorf("snapshot format version %d; this dsgd reads version %d", v, version)
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
// and for sending a snapshot over a stream).
func Encode(st State) []byte {
	var buf bytes.Buffer
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	_ = encode(io.MultiWriter(&buf, crc), st) // bytes.Buffer writes do not fail
	_ = binary.Write(&buf, binary.LittleEndian, crc.Sum32())
	return buf.Bytes()
}
