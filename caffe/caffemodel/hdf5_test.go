//go:build !purego

package caffemodel

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestHDF5Model: Caffe's HDF5 model of the siamese net (written by h5py in
// Net::ToHDF5's layout) loads into the shared blocks, and dsgd writes the
// same layout back.
func TestHDF5Model(t *testing.T) {
	m := readSiamese(t)
	layers, _ := siamese(t)
	n, err := ReadHDF5("testdata/siamese.caffemodel.h5")
	if err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, l := range n.Layers {
		shape = append(shape, l.Name+":"+strings.Repeat("b", len(l.Blobs)))
	}
	if !n.HDF5 || !slices.Equal(shape, []string{"data:", "ip1:bb", "ip1_p:", "ip2:bb"}) {
		t.Fatalf("layers %v", shape)
	}
	params := make([]float32, 23)
	rep, err := CopyTrainedNet(n, "siamese.caffemodel.h5", layers, params)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(params, m.params()) || len(rep.Kept) != 0 || !slices.Equal(rep.Copied, []string{"ip1", "ip2"}) {
		t.Fatalf("copied %v kept %v params %v", rep.Copied, rep.Kept, params)
	}

	path := filepath.Join(t.TempDir(), "s.caffemodel.h5")
	if err := WriteHDF5(path, FromNet("siamese", "TRAIN", layers, m.params())); err != nil {
		t.Fatal(err)
	}
	back, err := ReadHDF5(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, n) {
		t.Fatalf("dsgd's HDF5 model reads back as\n%+v\nCaffe's as\n%+v", back, n)
	}
	// ReadModel picks the format by the name, as Caffe does.
	if nm, err := ReadModel(path); err != nil || !nm.HDF5 {
		t.Fatalf("ReadModel(%s): %v", path, err)
	}
}

func TestHDF5State(t *testing.T) {
	m := readSiamese(t)
	st, err := ReadStateHDF5("testdata/siamese.solverstate.h5")
	if err != nil {
		t.Fatal(err)
	}
	if st.Iter != m.Iter || st.CurrentStep != m.CurrentStep || st.LearnedNet != m.LearnedNet || len(st.History) != 4 {
		t.Fatalf("state %+v", st)
	}
	for i, h := range st.History {
		if !slices.Equal(h.Data, m.History[i]) {
			t.Fatalf("history %d: %v, want %v", i, h.Data, m.History[i])
		}
	}
	_, blocks := siamese(t)
	hist := [][]float32{make([]float32, 23)}
	if err := SetHistory("s", st.History, hist, blocks); err != nil || hist[0][0] != m.History[0][0] {
		t.Fatalf("SetHistory: %v", err)
	}
	path := filepath.Join(t.TempDir(), "s.solverstate.h5")
	if err := WriteStateHDF5(path, st); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAnyState(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("state read back %+v, wrote %+v", back, st)
	}
}

// TestSharedWritersCrossCheck writes dsgd's files of the siamese net where
// DSGD_CROSSCHECK_OUT says, for scripts/caffe_shared_fixtures.py check
// (make caffe-crosscheck) to compare with Caffe's layout; without it, into
// a temporary directory, read back here.
func TestSharedWritersCrossCheck(t *testing.T) {
	m := readSiamese(t)
	layers, blocks := siamese(t)
	dir := os.Getenv("DSGD_CROSSCHECK_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	n := FromNet("siamese", "TRAIN", layers, m.params())
	mpath := filepath.Join(dir, "siamese.caffemodel")
	if err := Write(mpath, n); err != nil {
		t.Fatal(err)
	}
	if err := WriteHDF5(mpath+".h5", n); err != nil {
		t.Fatal(err)
	}
	var hist []Blob
	for i, b := range blocks {
		hist = append(hist, Blob{Shape: []int(b.Shape), Data: m.History[i]})
	}
	st := &State{Iter: m.Iter, CurrentStep: m.CurrentStep, LearnedNet: filepath.Join(dir, m.LearnedNet), History: hist}
	if err := WriteStateHDF5(filepath.Join(dir, "siamese.solverstate.h5"), st); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStateHDF5(filepath.Join(dir, "siamese.solverstate.h5")); err != nil {
		t.Fatal(err)
	}
}

func TestHDF5Errors(t *testing.T) {
	m := readSiamese(t)
	layers, _ := siamese(t)
	dir := t.TempDir()
	good, err := os.ReadFile("testdata/siamese.caffemodel.h5")
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.caffemodel.h5")
	if err := os.WriteFile(trunc, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	notH5 := filepath.Join(dir, "text.caffemodel.h5")
	if err := os.WriteFile(notH5, []byte("layer { }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// ip2's bias marked shared: the file lacks a blob ip2 owns.
	n := FromNet("siamese", "TRAIN", layers, m.params())
	n.Layers[3].Blobs[1].Shared = true
	lacks := filepath.Join(dir, "lacks.caffemodel.h5")
	if err := WriteHDF5(lacks, n); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.caffemodel.h5"), "no such file"},
		{trunc, "is not a readable HDF5 file"},
		{notH5, "is not a readable HDF5 file"},
		{"testdata/siamese.solverstate.h5", "has no group /data: not a Caffe HDF5 model"},
		{lacks, `layer "ip2" lacks blob 1 (dataset /data/ip2/1), which the layer owns in the net`},
	} {
		n, err := ReadHDF5(c.path)
		if err == nil {
			_, err = CopyTrainedNet(n, c.path, layers, make([]float32, 23))
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", filepath.Base(c.path), err, c.want)
		}
	}
	// A shape that differs names the layer and both shapes.
	n, err = ReadHDF5("testdata/siamese.caffemodel.h5")
	if err != nil {
		t.Fatal(err)
	}
	wide := slices.Clone(layers)
	wide[3].Blocks = slices.Clone(wide[3].Blocks)
	wide[3].Blocks[1].Shape = []int{5}
	if _, err := CopyTrainedNet(n, "m.h5", wide, make([]float32, 30)); err == nil || !strings.Contains(err.Error(), `layer "ip2" blob 1 has shape 2 in the file but 5 in the net`) {
		t.Errorf("shape mismatch: %v", err)
	}
	if _, err := ReadStateHDF5("testdata/siamese.caffemodel.h5"); err == nil || !strings.Contains(err.Error(), `no dataset "iter": not a Caffe HDF5 solver state`) {
		t.Errorf("model read as state: %v", err)
	}
	slash := &Net{Layers: []Layer{{Name: "inception_3a/1x1"}}}
	if err := WriteHDF5(filepath.Join(dir, "g.caffemodel.h5"), slash); err == nil || !strings.Contains(err.Error(), `layer name "inception_3a/1x1" cannot name an HDF5 group`) {
		t.Errorf("slash in a layer name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "g.caffemodel.h5")); err == nil {
		t.Error("a refused write left a file")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// TestHDF5FullDisk: an HDF5 model written to a full file system fails
// saying so ("no space left on device"), not only "cannot write dataset
// 0", and leaves no file (issue 23).
func TestHDF5FullDisk(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root on Linux")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	n := &Net{Name: "big", Layers: []Layer{{Name: "fc", Type: "InnerProduct", Blobs: []Blob{{Shape: []int{1024, 256}, Data: make([]float32, 1024*256)}}}}}
	path := filepath.Join(dir, "big.caffemodel.h5")
	err := WriteHDF5(path, n)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), path) {
		t.Fatalf("writing 1 MiB into a 256 KiB file system: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}
