//go:build !purego

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// TestCaffeBadInput: every bad Caffe input the Data and HDF5Data layers
// and --weights can meet stops `dsgd train` with exit 1 and a message
// naming the file (and key, line or layer) at fault: no panic, no hang.
func TestCaffeBadInput(t *testing.T) {
	dir := t.TempDir()
	fx := filepath.Join(dir, "fx")
	copyTree(t, caffeFixtures, fx)
	put := func(name string, b db.Backend, vals ...[]byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		w, err := db.Create(p, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if err := w.Put(fmt.Appendf(nil, "%08d", i), v); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	datum := func(d *caffepb.Datum) []byte {
		b, err := proto.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	raw := func(h int32, label int32) []byte {
		c, w := int32(1), h
		return datum(&caffepb.Datum{Channels: &c, Height: &h, Width: &w, Data: make([]byte, h*w), Label: &label})
	}
	enc := func(b []byte) []byte {
		e := true
		return datum(&caffepb.Datum{Data: b, Encoded: &e})
	}
	good12 := raw(12, 1)
	junk := put("junk_lmdb", db.LMDB, good12, []byte("\xff\xff\xff\xff"))
	shapes := put("shapes_lmdb", db.LMDB, good12, raw(10, 1))
	badimg := put("badimg_lmdb", db.LMDB, enc([]byte("no image here")))
	lv := put("level_db", db.LevelDB, good12)
	lock, err := db.Create(filepath.Join(dir, "locked_db2"), db.LevelDB)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	h5, err := os.ReadFile(filepath.Join(fx, "train.h5"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "trunc.h5", string(h5[:len(h5)/3]))
	write(t, dir, "trunc_list.txt", filepath.Join(dir, "trunc.h5")+"\n")
	write(t, dir, "test_list.txt", filepath.Join(fx, "test.h5")+"\n")
	write(t, dir, "solver.prototxt", logregSolver)
	cm, err := os.ReadFile(filepath.Join(fx, "model.caffemodel"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "trunc.caffemodel", string(cm[:len(cm)/2]))
	for _, c := range []struct {
		name, net string
		extra     []string
		want      []string
	}{
		{"missing", logreg("Data", dir+"/nope_lmdb", fx+"/test_lmdb", "LMDB"), nil, []string{"nope_lmdb", "does not exist"}},
		{"wrong backend", logreg("Data", lv, fx+"/test_lmdb", "LMDB"), nil, []string{lv, "is a leveldb database: set backend: LEVELDB"}},
		{"locked", logreg("Data", filepath.Join(dir, "locked_db2"), fx+"/test_lmdb", "LEVELDB"), nil, []string{"locked_db2", "another process holds the database"}},
		{"not datum", logreg("Data", junk, fx+"/test_lmdb", "LMDB"), nil, []string{junk, `key "00000001"`, "not a Caffe Datum"}},
		{"shape change", logreg("Data", shapes, fx+"/test_lmdb", "LMDB"), nil, []string{shapes, `key "00000001"`, "differs from the first record's"}},
		{"bad image", logreg("Data", badimg, fx+"/test_lmdb", "LMDB"), nil, []string{badimg, `key "00000000"`, "cannot decode image"}},
		{"truncated h5", logreg("HDF5Data", "trunc_list.txt", "test_list.txt", ""), nil, []string{"trunc.h5", "is not a readable HDF5 file"}},
		{"truncated caffemodel", logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"), []string{"--weights", "trunc.caffemodel"}, []string{"trunc.caffemodel", "is not a Caffe model"}},
		{"missing caffemodel.h5", logreg("Data", fx+"/train_lmdb", fx+"/test_lmdb", "LMDB"), []string{"--weights", "nope.caffemodel.h5"}, []string{"nope.caffemodel.h5", "no such file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			write(t, dir, "net.prototxt", c.net)
			args := append([]string{"train", "--solver", "solver.prototxt", "--net", "net.prototxt", "--threads", "1", "--workers", "1", "--iters", "2", "--snapshot-prefix", "none"}, c.extra...)
			code, out, errs := runCmd(t, dir, args...)
			for _, w := range c.want {
				if code != 1 || !strings.Contains(errs, w) {
					t.Fatalf("exit %d, want 1 and %q in stderr\n%s\n%s", code, w, out, errs)
				}
			}
			if strings.Contains(errs, "panic") || bytes.Contains([]byte(out), []byte("done:")) {
				t.Fatalf("ran or panicked:\n%s\n%s", out, errs)
			}
		})
	}
}
