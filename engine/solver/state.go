package solver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// Solver state format, version 1. All integers little-endian.
//
//	offset  size   field
//	0       8      magic "DSGDSOLV"
//	8       4      version, uint32 = 1
//	12      4      rule, uint32: 1 SGD, 2 Nesterov, 3 AdaGrad, 4 RMSProp, 5 Adam, 6 AdaDelta
//	16      8      n, uint64: parameters per buffer
//	24      4      k, uint32: history buffers (1; 2 for Adam and AdaDelta)
//	28      4·k·n  the buffers in History order, float32 IEEE-754 bits
//	28+4kn  4      CRC-32 (IEEE) of every byte before it
//
// The iteration count is not part of the state: the snapshot that holds it
// owns it and passes it to Step, as Caffe's SolverState holds iter beside
// the history.
const (
	stateMagic   = "DSGDSOLV"
	stateVersion = 1
	headerLen    = 28
	chunkFloats  = 8192
)

// WriteState writes the rule's history in the versioned binary format
// documented in state.go. The error is the writer's, wrapped.
func (s *Solver) WriteState(w io.Writer) error {
	crc := crc32.NewIEEE()
	mw := io.MultiWriter(w, crc)
	var hdr [headerLen]byte
	copy(hdr[:8], stateMagic)
	binary.LittleEndian.PutUint32(hdr[8:], stateVersion)
	binary.LittleEndian.PutUint32(hdr[12:], uint32(s.rule))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(s.n))
	binary.LittleEndian.PutUint32(hdr[24:], uint32(len(s.hist)))
	if _, err := mw.Write(hdr[:]); err != nil {
		return fmt.Errorf("solver: writing state: %w", err)
	}
	buf := make([]byte, 4*min(chunkFloats, s.n))
	for _, h := range s.hist {
		for len(h) > 0 {
			c := h[:min(chunkFloats, len(h))]
			h = h[len(c):]
			b := buf[:4*len(c)]
			for i, x := range c {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
			}
			if _, err := mw.Write(b); err != nil {
				return fmt.Errorf("solver: writing state: %w", err)
			}
		}
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return fmt.Errorf("solver: writing state: %w", err)
	}
	return nil
}

// ReadState replaces the history with a state written by WriteState. It
// reads exactly one state record and nothing after it. It checks the magic,
// version, rule (which must be this solver's type), n and buffer count (which
// must match) and the checksum, and fails on truncation; on any error the
// history is left as it was. Errors do not name the file: the caller, who
// opened it, wraps them.
func (s *Solver) ReadState(r io.Reader) error {
	crc := crc32.NewIEEE()
	tr := io.TeeReader(r, crc)
	var hdr [headerLen]byte
	if _, err := io.ReadFull(tr, hdr[:]); err != nil {
		return stateReadErr("header", err)
	}
	if string(hdr[:8]) != stateMagic {
		return fmt.Errorf("solver: state: bad magic %q, want %q (not a solver state)", hdr[:8], stateMagic)
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != stateVersion {
		return fmt.Errorf("solver: state: version %d, this build reads version %d", v, stateVersion)
	}
	if rl := rule(binary.LittleEndian.Uint32(hdr[12:])); rl != s.rule {
		return fmt.Errorf("solver: state: written by a %v solver, this solver is %v", rl, s.rule)
	}
	if n := binary.LittleEndian.Uint64(hdr[16:]); n != uint64(s.n) {
		return fmt.Errorf("solver: state: holds %d parameters, this solver has %d", n, s.n)
	}
	if k := binary.LittleEndian.Uint32(hdr[24:]); k != uint32(len(s.hist)) {
		return fmt.Errorf("solver: state: holds %d history buffers, %v keeps %d", k, s.rule, len(s.hist))
	}
	staged := make([][]float32, len(s.hist))
	buf := make([]byte, 4*min(chunkFloats, s.n))
	for j := range staged {
		h := make([]float32, s.n)
		staged[j] = h
		for len(h) > 0 {
			c := h[:min(chunkFloats, len(h))]
			h = h[len(c):]
			b := buf[:4*len(c)]
			if _, err := io.ReadFull(tr, b); err != nil {
				return stateReadErr(fmt.Sprintf("history buffer %d", j), err)
			}
			for i := range c {
				c[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
	}
	want := crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return stateReadErr("checksum", err)
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return fmt.Errorf("solver: state: checksum %08x, computed %08x (corrupt state)", got, want)
	}
	for j, h := range staged {
		copy(s.hist[j], h)
	}
	return nil
}

func stateReadErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("solver: state: truncated in the %s: %w", what, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("solver: state: reading the %s: %w", what, err)
}
