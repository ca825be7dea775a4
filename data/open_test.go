package data

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writeIDXDir writes a small MNIST-style directory: 4 training and 2 test
// images of 3x3, gzipped or not.
func writeIDXDir(t *testing.T, dir string, zip bool) {
	t.Helper()
	files := map[string][]byte{
		"train-images-idx3-ubyte": idxImages(4, 3, 3),
		"train-labels-idx1-ubyte": idxLabels(0, 1, 2, 3),
		"t10k-images-idx3-ubyte":  idxImages(2, 3, 3),
		"t10k-labels-idx1-ubyte":  idxLabels(9, 8),
	}
	for name, b := range files {
		if zip {
			name, b = name+".gz", gz(t, b)
		}
		writeFile(t, dir, name, b)
	}
}

// writeCIFARDir writes the six CIFAR-10 batch files, one or two records
// each, into dir.
func writeCIFARDir(t *testing.T, dir string) {
	t.Helper()
	for i := 1; i <= 5; i++ {
		writeFile(t, dir, cifarTrainName(i), cifarBytes(10*i, byte(i), byte(i+1)))
	}
	writeFile(t, dir, cifarTest, cifarBytes(0, 7))
}

func TestOpenBuiltinAndDirectories(t *testing.T) {
	root := t.TempDir()
	writeIDXDir(t, filepath.Join(root, "fashion-mnist"), true)
	writeIDXDir(t, filepath.Join(root, "plain"), false)
	writeCIFARDir(t, filepath.Join(root, "cifar10"))
	writeCIFARDir(t, filepath.Join(root, "download", cifarSubdir))
	o := Opener{Root: root}

	cases := []struct {
		spec    string
		split   Split
		name    string
		n, c, h int
		labels  []int32
	}{
		{"fashion-mnist", Train, "fashion-mnist/train", 4, 1, 3, []int32{0, 1, 2, 3}},
		{"fashion-mnist", Test, "fashion-mnist/test", 2, 1, 3, []int32{9, 8}},
		{filepath.Join(root, "plain"), Train, "plain/train", 4, 1, 3, []int32{0, 1, 2, 3}},
		{filepath.Join(root, "plain") + "/", Test, "plain/test", 2, 1, 3, []int32{9, 8}},
		{"cifar10", Train, "cifar10/train", 10, 3, 32, []int32{1, 2, 2, 3, 3, 4, 4, 5, 5, 6}},
		{"cifar10", Test, "cifar10/test", 1, 3, 32, []int32{7}},
		{filepath.Join(root, "download"), Train, "download/train", 10, 3, 32, []int32{1, 2, 2, 3, 3, 4, 4, 5, 5, 6}},
		{filepath.Join(root, "download", cifarSubdir), Test, cifarSubdir + "/test", 1, 3, 32, []int32{7}},
	}
	for _, tc := range cases {
		d, err := o.Open(tc.spec, tc.split)
		if err != nil {
			t.Errorf("Open(%q, %v): %v", tc.spec, tc.split, err)
			continue
		}
		if d.Name != tc.name || d.N != tc.n || d.C != tc.c || d.H != tc.h || !slices.Equal(d.Labels, tc.labels) {
			t.Errorf("Open(%q, %v) = %s %dx%dx%d labels %v; want %s %dx%dx%d labels %v",
				tc.spec, tc.split, d.Name, d.N, d.C, d.H, d.Labels, tc.name, tc.n, tc.c, tc.h, tc.labels)
		}
	}
	// Training batches come in file order: record 0 of data_batch_3 is third pair's first.
	d, _ := o.Open("cifar10", Train)
	if d.Image(4)[0] != 30 {
		t.Errorf("image 4 starts %d, want 30 (data_batch_3 record 0)", d.Image(4)[0])
	}
}

func TestOpenErrors(t *testing.T) {
	root := t.TempDir()
	lmdb := filepath.Join(root, "mnist_train_lmdb")
	writeFile(t, lmdb, "data.mdb", []byte("x"))
	writeFile(t, lmdb, "lock.mdb", []byte("x"))
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	trainOnly := filepath.Join(root, "trainonly")
	writeFile(t, trainOnly, "train-images-idx3-ubyte", idxImages(1, 2, 2))
	writeFile(t, trainOnly, "train-labels-idx1-ubyte", idxLabels(1))
	partial := filepath.Join(root, "partial")
	writeCIFARDir(t, partial)
	os.Remove(filepath.Join(partial, "data_batch_3.bin"))
	corrupt := filepath.Join(root, "corrupt")
	writeIDXDir(t, corrupt, false)
	writeFile(t, corrupt, "t10k-labels-idx1-ubyte", idxLabels(1, 2, 3))
	file := writeFile(t, root, "train-images-idx3-ubyte", idxImages(1, 2, 2))
	o := Opener{Root: root}

	cases := []struct {
		spec  string
		split Split
		want  []string
	}{
		{"fashion-mnist", Train, []string{filepath.Join(root, "fashion-mnist"), "does not exist", "apt-get install dataset-fashion-mnist", "--data DIR"}},
		{"mnist", Test, []string{filepath.Join(root, "mnist"), "does not exist", "--data DIR"}},
		{"cifar10", Train, []string{filepath.Join(root, "cifar10"), "does not exist", "--data DIR", "data_batch_1.bin"}},
		{filepath.Join(root, "nowhere"), Train, []string{filepath.Join(root, "nowhere"), "does not exist", "--data"}},
		{lmdb, Train, []string{lmdb, "a Caffe LMDB database", "backend: LMDB", "train-images-idx3-ubyte", "data_batch_1.bin"}},
		{filepath.Join(lmdb, "data.mdb"), Train, []string{lmdb, "a Caffe LMDB database"}},
		{empty, Train, []string{empty, "no data set found", "train-images-idx3-ubyte", "data_batch_1.bin"}},
		{trainOnly, Test, []string{trainOnly, "missing t10k-images-idx3-ubyte (or t10k-images-idx3-ubyte.gz) for the test split"}},
		{partial, Train, []string{partial, "missing data_batch_3.bin for the train split"}},
		{corrupt, Test, []string{"t10k-images-idx3-ubyte has 2 images but", "t10k-labels-idx1-ubyte has 3 labels"}},
		{file, Train, []string{file, "is a file", "point --data at the directory"}},
		{"", Train, []string{"no data set given"}},
		{"synthetic:N=0", Train, []string{"synthetic:N=0", "positive integer"}},
	}
	for _, tc := range cases {
		_, err := o.Open(tc.spec, tc.split)
		t.Run(filepath.Base(tc.spec), func(t *testing.T) { wantErr(t, err, tc.want...) })
	}
}

func TestOpenSynthetic(t *testing.T) {
	tr, err := Open("synthetic:N=30,C=2,H=4,W=5,classes=3,seed=9", Train)
	if err != nil {
		t.Fatal(err)
	}
	te, err := Open("synthetic:N=30,C=2,H=4,W=5,classes=3,seed=9", Test)
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != 30 || tr.C != 2 || tr.H != 4 || tr.W != 5 || tr.Classes != 3 || te.Name != "synthetic/test" {
		t.Errorf("got %s %dx%dx%dx%d %d classes", tr.Name, tr.N, tr.C, tr.H, tr.W, tr.Classes)
	}
	if string(tr.Pixels) == string(te.Pixels) {
		t.Error("train and test splits are identical")
	}
}

// The real Fashion-MNIST from Debian's dataset-fashion-mnist package.
func TestOpenFashionMNIST(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 30 MB of gzip; skipped in -short mode")
	}
	dir := filepath.Join(DefaultRoot, "fashion-mnist")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s is absent (apt-get install dataset-fashion-mnist provides it): %v", dir, err)
	}
	for _, tc := range []struct {
		split Split
		n     int
	}{{Train, 60000}, {Test, 10000}} {
		d, err := Open("fashion-mnist", tc.split)
		if err != nil {
			t.Fatal(err)
		}
		if d.N != tc.n || d.C != 1 || d.H != 28 || d.W != 28 || d.Classes != 10 {
			t.Errorf("%v: got %dx%dx%dx%d, want %dx1x28x28", tc.split, d.N, d.C, d.H, d.W, tc.n)
		}
		var count [10]int
		for _, l := range d.Labels {
			if l > 9 {
				t.Fatalf("label %d out of range", l)
			}
			count[l]++
		}
		for c, k := range count {
			if k != tc.n/10 { // Fashion-MNIST is balanced
				t.Errorf("%v: class %d has %d images, want %d", tc.split, c, k, tc.n/10)
			}
		}
	}
}
