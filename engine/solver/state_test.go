package solver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func cloneHist(h [][]float32) [][]float32 {
	c := make([][]float32, len(h))
	for i := range h {
		c[i] = slices.Clone(h[i])
	}
	return c
}

func histEqual(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, func(x, y []float32) bool { return bitsEqual(x, y) })
}

// TestStateRoundTrip runs k steps, snapshots, restores into a fresh solver
// and checks that both continue identically.
func TestStateRoundTrip(t *testing.T) {
	for _, typ := range allTypes {
		t.Run(typ, func(t *testing.T) {
			cfg := ruleConfig(typ)
			a, err := New(cfg, testN, testSegs)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(9, 9))
			wa := randVec(rng, testN, 1)
			for iter := range 4 {
				a.Step(iter, wa, randVec(rng, testN, 1))
			}
			var buf bytes.Buffer
			if err := a.WriteState(&buf); err != nil {
				t.Fatal(err)
			}
			if want := headerLen + 4*len(a.History())*testN + 4; buf.Len() != want {
				t.Fatalf("state is %d bytes, want %d", buf.Len(), want)
			}
			buf.WriteString("trailing data belongs to the caller")
			b, _ := New(cfg, testN, testSegs)
			alias := b.History()
			if err := b.ReadState(&buf); err != nil {
				t.Fatal(err)
			}
			if rest := buf.String(); rest != "trailing data belongs to the caller" {
				t.Fatalf("ReadState consumed past its record: %q left", rest)
			}
			if !histEqual(a.History(), b.History()) || !histEqual(alias, a.History()) {
				t.Fatal("restored history differs, or History's slices went stale")
			}
			wb := slices.Clone(wa)
			for iter := 4; iter < 8; iter++ {
				g := randVec(rng, testN, 1)
				a.Step(iter, wa, g)
				b.Step(iter, wb, g)
			}
			if !bitsEqual(wa, wb) || !histEqual(a.History(), b.History()) {
				t.Fatal("restored solver continues differently")
			}
		})
	}
}

// TestStateFormat pins the header layout documented in state.go.
func TestStateFormat(t *testing.T) {
	s, err := New(ruleConfig("Adam"), 3, []Segment{{Off: 0, Len: 3, LRMult: 1}})
	if err != nil {
		t.Fatal(err)
	}
	s.History()[0][1] = 1.5
	s.History()[1][2] = -2
	var buf bytes.Buffer
	if err := s.WriteState(&buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	le := binary.LittleEndian
	if string(b[:8]) != "DSGDSOLV" || le.Uint32(b[8:]) != 1 || le.Uint32(b[12:]) != 5 ||
		le.Uint64(b[16:]) != 3 || le.Uint32(b[24:]) != 2 {
		t.Fatalf("header % x", b[:28])
	}
	if le.Uint32(b[28+4:]) != 0x3fc00000 || le.Uint32(b[28+20:]) != 0xc0000000 {
		t.Fatalf("body % x", b[28:52])
	}
	if len(b) != 28+24+4 {
		t.Fatalf("len %d", len(b))
	}
}

func smallState(t *testing.T, typ string) (*Solver, []byte) {
	t.Helper()
	s, err := New(ruleConfig(typ), 5, []Segment{{Off: 0, Len: 5, LRMult: 1}})
	if err != nil {
		t.Fatal(err)
	}
	w := []float32{1, 2, 3, 4, 5}
	s.Step(0, w, []float32{0.5, -1, 2, 0, 3})
	var buf bytes.Buffer
	if err := s.WriteState(&buf); err != nil {
		t.Fatal(err)
	}
	return s, buf.Bytes()
}

func TestReadStateErrors(t *testing.T) {
	_, good := smallState(t, "Adam")
	_, sgd := smallState(t, "SGD")
	patch := func(off int, v uint32) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	tests := []struct {
		name string
		in   io.Reader
		n    int
		want string
	}{
		{"empty", bytes.NewReader(nil), 5, "truncated in the header"},
		{"short header", bytes.NewReader(good[:20]), 5, "truncated in the header"},
		{"truncated body", bytes.NewReader(good[:40]), 5, "truncated in the history buffer 0"},
		{"truncated second buffer", bytes.NewReader(good[:28+20+8]), 5, "truncated in the history buffer 1"},
		{"no checksum", bytes.NewReader(good[:len(good)-4]), 5, "truncated in the checksum"},
		{"bad magic", bytes.NewReader(append([]byte("CAFFESOL"), good[8:]...)), 5, "bad magic"},
		{"version", bytes.NewReader(patch(8, 2)), 5, "version 2, this build reads version 1"},
		{"wrong rule", bytes.NewReader(sgd), 5, "written by a SGD solver, this solver is Adam"},
		{"unknown rule", bytes.NewReader(patch(12, 77)), 5, "written by a rule(77) solver"},
		{"buffer count", bytes.NewReader(patch(24, 1)), 5, "holds 1 history buffers, Adam keeps 2"},
		{"wrong n", bytes.NewReader(good), 6, "holds 5 parameters, this solver has 6"},
		{"body bit flip", bytes.NewReader(func() []byte { b := slices.Clone(good); b[33] ^= 4; return b }()), 5,
			"checksum"},
		{"reader error", iotest.ErrReader(errors.New("disk on fire")), 5, "disk on fire"},
		{"error mid-body", io.MultiReader(bytes.NewReader(good[:30]), iotest.ErrReader(errors.New("boom"))), 5,
			"reading the history buffer 0: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(ruleConfig("Adam"), tt.n, []Segment{{Off: 0, Len: tt.n, LRMult: 1}})
			if err != nil {
				t.Fatal(err)
			}
			for j, h := range s.History() {
				for i := range h {
					h[i] = float32(10*j + i)
				}
			}
			before := cloneHist(s.History())
			err = s.ReadState(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "solver: state: ") {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if !histEqual(before, s.History()) {
				t.Fatal("failed ReadState changed the history")
			}
		})
	}
}

// TestReadStateEveryCorruption truncates the state at every length and
// flips every bit; each must fail and leave the history unchanged.
func TestReadStateEveryCorruption(t *testing.T) {
	s, good := smallState(t, "Adam")
	before := cloneHist(s.History())
	s.Reset()
	zero := cloneHist(s.History())
	for n := range len(good) {
		if err := s.ReadState(bytes.NewReader(good[:n])); err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated to %d: error %v", n, err)
		}
	}
	for i := range len(good) {
		for bit := range 8 {
			b := slices.Clone(good)
			b[i] ^= 1 << bit
			if err := s.ReadState(bytes.NewReader(b)); err == nil {
				t.Fatalf("bit %d of byte %d flipped: no error", bit, i)
			}
		}
	}
	if !histEqual(zero, s.History()) {
		t.Fatal("a failed ReadState changed the history")
	}
	if err := s.ReadState(bytes.NewReader(good)); err != nil || !histEqual(before, s.History()) {
		t.Fatalf("intact state: %v", err)
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after < len(p) {
		return 0, errors.New("disk full")
	}
	f.after -= len(p)
	return len(p), nil
}

func TestWriteStateError(t *testing.T) {
	s, good := smallState(t, "SGD")
	for _, after := range []int{0, headerLen, len(good) - 4} {
		if err := s.WriteState(&failWriter{after: after}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("fail after %d bytes: error %v", after, err)
		}
	}
}

func TestStateEmptySolver(t *testing.T) {
	s, err := New(Config{BaseLR: 1, LRPolicy: "fixed"}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.WriteState(&buf); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadState(&buf); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadState feeds arbitrary bytes to ReadState on an SGD and an Adam
// solver: it must not panic, must leave the history alone when it fails,
// and when it succeeds, writing the state back must reproduce the record.
func FuzzReadState(f *testing.F) {
	for _, typ := range []string{"SGD", "Adam", "RMSProp"} {
		s, err := New(ruleConfig(typ), 3, []Segment{{Off: 0, Len: 3, LRMult: 1}})
		if err != nil {
			f.Fatal(err)
		}
		w := []float32{1, 2, 3}
		s.Step(0, w, []float32{1, -1, 0.5})
		var buf bytes.Buffer
		if err := s.WriteState(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
		f.Add(buf.Bytes()[:buf.Len()/2])
	}
	f.Add([]byte{})
	f.Add([]byte("DSGDSOLV\x01\x00\x00\x00\x05\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, typ := range []string{"SGD", "Adam"} {
			s, err := New(ruleConfig(typ), 3, []Segment{{Off: 0, Len: 3, LRMult: 1}})
			if err != nil {
				t.Fatal(err)
			}
			s.History()[0][0] = 42
			before := cloneHist(s.History())
			r := bytes.NewReader(data)
			if err := s.ReadState(r); err != nil {
				if !histEqual(before, s.History()) {
					t.Fatalf("%s: failed ReadState changed the history", typ)
				}
				continue
			}
			used := len(data) - r.Len()
			var buf bytes.Buffer
			if err := s.WriteState(&buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), data[:used]) {
				t.Fatalf("%s: rewritten state differs from the record read", typ)
			}
		}
	})
}
