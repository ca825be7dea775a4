//go:build !purego

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/data"
	"dsgd/data/db"
)

// TestDataTools: Caffe's three data tools as subcommands, each with
// progress on stderr and a summary on stdout, a database made by one read
// by the others, and bad input refused naming the file or flag.
func TestDataTools(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(dir, "fx")
	copyTree(t, caffeFixtures, fx)
	imgs, labels := fx+"/idx/train-images-idx3-ubyte", fx+"/idx/train-labels-idx1-ubyte"
	imageList(t, fx, dir, data.Train, "list.txt")
	// The same list with a line whose image is missing: skipped, as Caffe
	// does, with a warning naming the line.
	lines, err := os.ReadFile(filepath.Join(dir, "list.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "list_missing.txt", string(lines)+"nope.png 3\n")
	for _, c := range []struct {
		name     string
		args     []string
		progress string
		summary  string
	}{
		{"convert-mnist", []string{"convert-mnist", "--images", imgs, "--labels", labels, "--out", "mnist_lmdb"},
			"convert-mnist: 400/400", "convert-mnist: wrote 400 records of 1x12x12 to mnist_lmdb (lmdb"},
		{"convert-mnist leveldb", []string{"convert-mnist", "--images", imgs, "--labels", labels, "--out", "mnist_leveldb", "--backend", "leveldb"},
			"convert-mnist: 400/400", "to mnist_leveldb (leveldb"},
		{"convert-imageset", []string{"convert-imageset", "--list", "list.txt", "--root", "png/", "--gray", "--encoded", "--shuffle", "--resize_height", "16", "--resize_width", "14", "--out", "list_lmdb"},
			"convert-imageset: 400/400", "convert-imageset: wrote 400 encoded records (first 1x16x14) to list_lmdb"},
		{"convert-imageset in Caffe's form", []string{"convert-imageset", "--gray", "png/", "list_missing.txt", "pos_lmdb"},
			"warning: list_missing.txt:401: skipped", "convert-imageset: wrote 400 raw records (first 1x12x12) to pos_lmdb"},
		{"compute-image-mean", []string{"compute-image-mean", "--db", "mnist_lmdb", "--out", "mean.binaryproto"},
			"compute-image-mean: 400/400", "compute-image-mean: mean of 400 images of 1x12x12 written to mean.binaryproto"},
		{"compute-image-mean of the encoded list", []string{"compute-image-mean", "--db", "list_lmdb", "--out", "list_mean.binaryproto"},
			"compute-image-mean: 400/400", "mean of 400 images of 1x16x14"},
		// Caffe's scripts, word for word but the program's name
		// (create_mnist.sh's flag after the arguments; make_imagenet_mean.sh).
		{"convert_mnist_data as create_mnist.sh runs it", []string{"convert_mnist_data", imgs, labels, "caffe_mnist_leveldb", "--backend=leveldb"},
			"convert-mnist: 400/400", "to caffe_mnist_leveldb (leveldb"},
		{"compute_image_mean as make_imagenet_mean.sh runs it", []string{"compute_image_mean", "-backend=leveldb", "caffe_mnist_leveldb", "caffe_mean.binaryproto"},
			"compute-image-mean: 400/400", "mean of 400 images of 1x12x12 written to caffe_mean.binaryproto"},
		{"compute_image_mean without OUTPUT_FILE", []string{"compute_image_mean", "mnist_lmdb"},
			"compute-image-mean: 400/400", "(no OUTPUT_FILE: not written)"},
	} {
		code, out, errs := runCmd(t, dir, c.args...)
		if code != 0 || !strings.Contains(errs, c.progress) || !strings.Contains(out, c.summary) {
			t.Errorf("%s: exit %d\nstdout %q\nstderr %q\nwant progress %q and summary %q", c.name, code, out, errs, c.progress, c.summary)
		}
	}
	// The shuffled list database holds every image once, in another order.
	ds, err := data.ReadDB(filepath.Join(dir, "list_lmdb"), data.DBConfig{Backend: db.LMDB})
	if err != nil {
		t.Fatal(err)
	}
	files, inPlace := map[int]bool{}, 0
	for i, k := range ds.Keys {
		var at, file int
		if _, err := fmt.Sscanf(k, "key \"%08d_train_%04d.png\"", &at, &file); err != nil || at != i {
			t.Fatalf("record %d: key %s, want Caffe's %%08d_PATH", i, k)
		}
		files[file] = true
		if file == i {
			inPlace++
		}
	}
	if len(files) != 400 || inPlace > 20 {
		t.Errorf("convert-imageset --shuffle: %d distinct images, %d of 400 in list order", len(files), inPlace)
	}
	if _, err := data.ReadBlobProto(filepath.Join(dir, "mean.binaryproto")); err != nil {
		t.Error(err)
	}

	write(t, dir, "badlist.txt", "nope.png 1\n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"convert-mnist", "--images", imgs, "--labels", labels, "--out", "mnist_lmdb"}, 1, "mnist_lmdb already exists"},
		{[]string{"convert-mnist", "--images", "nope-idx", "--labels", labels, "--out", "x_lmdb"}, 1, "nope-idx"},
		{[]string{"convert-mnist", "--images", imgs}, 2, "--images, --labels and --out are required"},
		{[]string{"convert-imageset", "--list", "badlist.txt", "--root", "png/", "--out", "y_lmdb"}, 1, "none of its 1 images"},
		{[]string{"convert-imageset", "png/", "list.txt"}, 2, "give ROOTFOLDER/ LISTFILE DB_NAME"},
		{[]string{"convert-imageset", "--list", "list.txt", "png/", "list.txt", "w_lmdb"}, 2, "give one form"},
		{[]string{"convert-imageset", "--list", "list.txt", "--resize_height", "5", "--out", "z_lmdb"}, 2, "give both, positive, or neither"},
		{[]string{"compute-image-mean", "--db", "nope_lmdb", "--out", "m.binaryproto"}, 1, "nope_lmdb"},
		{[]string{"compute-image-mean", "--db", "mnist_lmdb", "--out", "mean.binaryproto", "--backend", "rocksdb"}, 2, "--backend"},
		{[]string{"convert-mnist", imgs, labels}, 2, "give input_image_file input_label_file output_db_file"},
		{[]string{"compute-image-mean", "a", "b", "c"}, 2, "give INPUT_DB [OUTPUT_FILE]"},
		{[]string{"compute-image-mean", "--db", "mnist_lmdb", "mnist_lmdb"}, 2, "give one form"},
	} {
		code, out, errs := runCmd(t, dir, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d (want %d)\nstdout %q\nstderr %q\nwant %q", c.args, code, c.code, out, errs, c.want)
		}
	}
	for _, half := range []string{"y_lmdb", "x_lmdb"} {
		if _, err := os.Stat(filepath.Join(dir, half)); err == nil {
			t.Errorf("a failed conversion left %s behind", half)
		}
	}
}

// TestConvertCIFARCommand: create_cifar10.sh's conversion in Caffe's form
// (convert_cifar_data IN OUT lmdb) and dsgd's flags, and its usage
// errors.
func TestConvertCIFARCommand(t *testing.T) {
	dir := t.TempDir()
	rec := make([]byte, 3073) // label 0, black
	if err := os.Mkdir(filepath.Join(dir, "cifar"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		write(t, dir, filepath.Join("cifar", f), string(rec))
	}
	for _, c := range []struct {
		args      []string
		code      int
		out, errs string
		dbs       []string
	}{
		{[]string{"convert_cifar_data", "cifar", "a", "lmdb"}, 0, "wrote 5 training and 1 test records of 3x32x32 to a (lmdb", "", []string{"a/cifar10_train_lmdb", "a/cifar10_test_lmdb"}},
		{[]string{"convert-cifar", "--data", "cifar", "--out", "b", "--backend", "leveldb"}, 0, "to b (leveldb", "", []string{"b/cifar10_train_leveldb", "b/cifar10_test_leveldb"}},
		{[]string{"convert-cifar", "--data", "cifar", "--out", "c"}, 0, "to c (lmdb", "", []string{"c/cifar10_train_lmdb"}},
		{[]string{"convert-cifar", "cifar", "d"}, 2, "", "give INPUT_FOLDER OUTPUT_FOLDER DB_TYPE", nil},
		{[]string{"convert-cifar", "cifar", "d", "lmdb", "--backend", "lmdb"}, 2, "", "give one form", nil},
		{[]string{"convert-cifar", "cifar", "d", "rocksdb"}, 2, "", "--backend", nil},
		{[]string{"convert-cifar", "--out", "d"}, 2, "", "--data and --out are required", nil},
		{[]string{"convert-cifar", "nope", "d", "lmdb"}, 1, "", "nope/data_batch_1.bin", nil},
	} {
		code, out, errs := runCmd(t, dir, c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.errs) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.args, code, out, errs, c.code, c.out, c.errs)
		}
		for _, d := range c.dbs {
			if _, err := os.Stat(filepath.Join(dir, d)); err != nil {
				t.Errorf("%q: %v", c.args, err)
			}
		}
	}
}
