package checkpoint

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/engine/tensor"
)

func sample() State {
	return State{
		Iter:   1234,
		Layout: LayoutHash([]Block{{"conv1/0", tensor.Shape{20, 1, 5, 5}}, {"conv1/1", tensor.Shape{20}}}),
		Params: []float32{1, -2.5, 3e-8, 0},
		Solver: []byte("solver-state"),
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap.dsgd")
	st := sample()
	if err := Write(path, st); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Iter != st.Iter || got.Layout != st.Layout || !bytes.Equal(got.Solver, st.Solver) || len(got.Params) != len(st.Params) {
		t.Fatalf("got %+v, want %+v", got, st)
	}
	for i := range st.Params {
		if got.Params[i] != st.Params[i] {
			t.Fatalf("param %d: got %v want %v", i, got.Params[i], st.Params[i])
		}
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want only the snapshot", len(ents))
	}
}

func TestLayoutHashDistinguishes(t *testing.T) {
	a := LayoutHash([]Block{{"a", tensor.Shape{2, 3}}})
	for _, other := range [][]Block{
		{{"a", tensor.Shape{3, 2}}},
		{{"b", tensor.Shape{2, 3}}},
		{{"a", tensor.Shape{2, 3}}, {"c", tensor.Shape{1}}},
	} {
		if LayoutHash(other) == a {
			t.Errorf("layout %v hashes like %v", other, "a 2x3")
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good := Encode(sample())
	flip := append([]byte(nil), good...)
	flip[45] ^= 1
	badVersion := append([]byte(nil), good...)
	badVersion[8] = 9
	huge := append([]byte(nil), good...)
	huge[39] = 0x7f // parameter count far beyond the file
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"magic", append([]byte("NOTASNAP"), good[8:]...), "bad magic"},
		{"version", badVersion, "version 9"},
		{"truncated", good[:len(good)-10], "truncated"},
		{"checksum", flip, "checksum"},
		{"count", huge, "do not fit"},
		{"trailing", append(append([]byte(nil), good...), 0), "trailing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(bytes.NewReader(c.in), int64(len(c.in)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestWriteUnwritable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing", "dir")
	err := Write(filepath.Join(dir, "s"), sample())
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("got %v, want an error naming %s", err, dir)
	}
}

func TestFailedWriteLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snap")
	// A non-empty directory in the way makes the final rename fail.
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, sample()); err == nil {
		t.Fatal("write over a directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "snap" {
		t.Fatalf("directory holds %v, want only the pre-existing entry", ents)
	}
}

func FuzzDecode(f *testing.F) {
	withRun := sample()
	withRun.Run = []byte(`{"version":1}`)
	f.Add(Encode(sample()))
	f.Add(Encode(withRun))
	f.Add(v1Encode(sample()))
	f.Add([]byte("DSGDSNAP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Decode(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		// A current-version file re-encodes to itself; an older one to
		// the current version of the same state.
		if binary.LittleEndian.Uint32(b[8:]) == version && !bytes.Equal(Encode(st), b) {
			t.Fatal("decoded snapshot does not re-encode to the same bytes")
		}
		again, err := Decode(bytes.NewReader(Encode(st)), int64(len(Encode(st))))
		if err != nil || again.Iter != st.Iter || !bytes.Equal(again.Run, st.Run) || len(again.Params) != len(st.Params) {
			t.Fatalf("re-encoded snapshot decodes to %+v, %v", again, err)
		}
		// ReadRun reads the same configuration without the weights.
		path := filepath.Join(t.TempDir(), "s")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := ReadRun(path)
		if err != nil || !bytes.Equal(run, st.Run) {
			t.Fatalf("ReadRun: %q, %v; Decode: %q", run, err, st.Run)
		}
	})
}

// TestCleanTemps: the leftovers of killed writes of this run's snapshots
// are removed; snapshots and other files are not.
func TestCleanTemps(t *testing.T) {
	dir := t.TempDir()
	names := map[string]bool{ // name -> removed
		".net_iter_100.dsgdsnap.tmp123": true,
		".net_iter_7.dsgdsnap.tmp9":     true,
		"net_iter_100.dsgdsnap":         false,
		".other_iter_1.dsgdsnap.tmp1":   false,
		"notes.txt":                     false,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := CleanTemps(filepath.Join(dir, "net_iter_*.dsgdsnap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("removed %v, want the two temporaries", removed)
	}
	for n, gone := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if gone != os.IsNotExist(err) {
			t.Errorf("%s: removed %v, want %v", n, os.IsNotExist(err), gone)
		}
	}
}

// TestRunConfig: the run configuration round-trips, ReadRun reads it
// alone, and a version 1 file (no configuration) still reads.
func TestRunConfig(t *testing.T) {
	dir := t.TempDir()
	st := sample()
	st.Run = []byte(`{"scheme":"easgd","workers":"4"}`)
	path := filepath.Join(dir, "v2.dsgdsnap")
	if err := Write(path, st); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil || string(got.Run) != string(st.Run) {
		t.Fatalf("Read: run %q, %v", got.Run, err)
	}
	run, err := ReadRun(path)
	if err != nil || string(run) != string(st.Run) {
		t.Fatalf("ReadRun: %q, %v", run, err)
	}

	// A version 1 file, as dsgd wrote it before: no configuration.
	v1 := v1Encode(sample())
	p1 := filepath.Join(dir, "v1.dsgdsnap")
	if err := os.WriteFile(p1, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = Read(p1)
	if err != nil || got.Iter != 1234 || len(got.Params) != 4 || got.Run != nil {
		t.Fatalf("version 1: %+v, %v", got, err)
	}
	if run, err := ReadRun(p1); err != nil || run != nil {
		t.Fatalf("ReadRun of version 1: %q, %v", run, err)
	}
}

// v1Encode writes st in format version 1, independently of encode.
func v1Encode(st State) []byte {
	var b []byte
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(st.Iter))
	b = binary.LittleEndian.AppendUint64(b, st.Layout)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(st.Params)))
	for _, v := range st.Params {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(st.Solver)))
	b = append(b, st.Solver...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}
