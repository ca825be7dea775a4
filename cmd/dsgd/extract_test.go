//go:build !purego

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dsgd/data"
	"dsgd/data/db"
	"dsgd/engine/cuda"
)

// extractNet is scripts/extract_features_fixture.py's net: the net of
// scripts/caffe_torch_net.py with a Softmax "prob", batches of 5.
const extractNet = `name: "torchnet"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "@TEST" batch_size: 5 backend: LMDB } transform_param { scale: 0.00390625 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "/no/such/train_lmdb" batch_size: 5 backend: LMDB } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" convolution_param { num_output: 6 kernel_size: 3 } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 4 } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

// extractFixture is cmd/dsgd/testdata/extract_features.json.
type extractFixture struct {
	BatchSize int `json:"batch_size"`
	Batches   int
	Blobs     map[string]struct {
		CHW    []int
		Keys   []string
		Values [][]float64
	}
}

// extractSetup makes dir hold the net over a copy of the fixtures' test
// LMDB and returns the weights' absolute path and the fixture.
func extractSetup(t *testing.T, dir string) (string, extractFixture) {
	t.Helper()
	copyTree(t, filepath.Join(caffeFixtures, "test_lmdb"), filepath.Join(dir, "images"))
	write(t, dir, "net.prototxt", strings.Replace(extractNet, "@TEST", filepath.Join(dir, "images"), 1))
	w, err := filepath.Abs("../../caffe/caffemodel/testdata/torchnet.caffemodel")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/extract_features.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx extractFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	return w, fx
}

// TestExtractFeaturesTorch: dsgd extract-features, in Caffe's positional
// form and in dsgd's flags, over LMDB and LevelDB, writes for "pool" (4
// axes) and "prob" (2) one Datum per image of 3 batches of 5, under
// Caffe's keys, with Caffe's legacy shape and the features PyTorch
// computes in float64 from the same weights and images
// (scripts/extract_features_fixture.py).
func TestExtractFeaturesTorch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend db.Backend
		args    func(w string) []string
	}{
		{"caffe's form, lmdb", db.LMDB, func(w string) []string {
			return []string{"extract-features", "--threads", "2", w, "net.prototxt", "pool,prob", "out_pool,out_prob", "3", "lmdb", "CPU"}
		}},
		{"flags, leveldb", db.LevelDB, func(w string) []string {
			return []string{"extract-features", "--weights", w, "--net", "net.prototxt", "--blobs", "pool,prob", "--out", "out_pool,out_prob", "--batches", "3", "--backend", "leveldb", "--threads", "1"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, fx := extractSetup(t, dir)
			code, out, errs := runCmd(t, dir, tc.args(w)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			for _, want := range []string{"pool: 15 records of 6x5x5 to out_pool", "prob: 15 records of 4x1x1 to out_prob"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if !strings.Contains(errs, "copied conv, ip") {
				t.Errorf("no copy report:\n%s", errs)
			}
			for _, blob := range []string{"pool", "prob"} {
				checkFeatures(t, filepath.Join(dir, "out_"+blob), tc.backend, fx, blob, 1e-5)
			}
			assertEntries(t, dir, "images", "net.prototxt", "out_pool", "out_prob")
		})
	}
}

// TestExtractFeaturesGPU: with GPU 0 (Caffe's form) the features are
// PyTorch's too, the blobs read back from the device. Without a GPU it
// skips, unless DSGD_REQUIRE_GPU is set (scripts/gpu-check.sh).
func TestExtractFeaturesGPU(t *testing.T) {
	if _, err := cuda.Probe(); err != nil {
		if os.Getenv("DSGD_REQUIRE_GPU") != "" {
			t.Fatalf("DSGD_REQUIRE_GPU is set but: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	dir := t.TempDir()
	w, fx := extractSetup(t, dir)
	code, out, errs := runCmd(t, dir, "extract-features", w, "net.prototxt", "pool,prob", "out_pool,out_prob", "3", "lmdb", "GPU", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, blob := range []string{"pool", "prob"} {
		checkFeatures(t, filepath.Join(dir, "out_"+blob), db.LMDB, fx, blob, 1e-4)
	}
}

// checkFeatures checks the database path of backend b against the
// fixture's blob: every key, shape and value (within tol), no label, no
// data, and no record past the fixture's.
func checkFeatures(t *testing.T, path string, b db.Backend, fx extractFixture, blob string, tol float64) {
	t.Helper()
	want := fx.Blobs[blob]
	if len(want.Keys) != fx.BatchSize*fx.Batches {
		t.Fatalf("fixture %s: %d keys", blob, len(want.Keys))
	}
	var worst float64
	i := 0
	err := db.Scan(path, b, func(k, v []byte) error {
		if i >= len(want.Keys) {
			return fmt.Errorf("record %d (%q) past the fixture's %d", i, k, len(want.Keys))
		}
		if string(k) != want.Keys[i] {
			return fmt.Errorf("key %d %q, want %q", i, k, want.Keys[i])
		}
		d, err := data.DecodeDatum(v)
		if err != nil {
			return err
		}
		if got := []int{int(d.GetChannels()), int(d.GetHeight()), int(d.GetWidth())}; !slices.Equal(got, want.CHW) {
			return fmt.Errorf("record %s: shape %v, want %v", k, got, want.CHW)
		}
		if d.Label != nil || len(d.Data) > 0 {
			return fmt.Errorf("record %s has a label or data: %v", k, d)
		}
		if len(d.FloatData) != len(want.Values[i]) {
			return fmt.Errorf("record %s: %d values, want %d", k, len(d.FloatData), len(want.Values[i]))
		}
		for j, g := range d.FloatData {
			worst = max(worst, math.Abs(float64(g)-want.Values[i][j]))
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if i != len(want.Keys) {
		t.Fatalf("%s: %d records, want %d", path, i, len(want.Keys))
	}
	t.Logf("%s: largest difference from PyTorch's float64 %.2g", blob, worst)
	if worst > tol {
		t.Errorf("%s: features differ from PyTorch's by up to %g", path, worst)
	}
}

// TestExtractFeaturesImageDataHDF5: an ImageData layer over PNGs of the
// same images, and the weights in Caffe's HDF5 layout
// (testdata/torchnet.caffemodel.h5, by h5py), give PyTorch's features
// too: the data layers and weights read as dsgd test reads them.
func TestExtractFeaturesImageDataHDF5(t *testing.T) {
	dir := t.TempDir()
	_, fx := extractSetup(t, dir)
	var list strings.Builder
	i := 0
	if err := db.Scan(filepath.Join(dir, "images"), db.LMDB, func(_, v []byte) error {
		if i == fx.BatchSize*fx.Batches {
			return nil
		}
		d, err := data.DecodeDatum(v)
		if err != nil {
			return err
		}
		im := image.NewGray(image.Rect(0, 0, int(d.GetWidth()), int(d.GetHeight())))
		copy(im.Pix, d.Data)
		var b bytes.Buffer
		if err := png.Encode(&b, im); err != nil {
			return err
		}
		name := fmt.Sprintf("im%02d.png", i)
		write(t, dir, name, b.String())
		fmt.Fprintf(&list, "%s %d\n", name, d.GetLabel())
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "list.txt", list.String())
	net := strings.Replace(extractNet, `type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "@TEST" batch_size: 5 backend: LMDB }`, `type: "ImageData" top: "data" top: "label" include { phase: TEST }
  image_data_param { source: "list.txt" root_folder: "`+dir+`/" batch_size: 5 is_color: false }`, 1)
	if net == extractNet {
		t.Fatal("the net's Data layer was not replaced")
	}
	write(t, dir, "net.prototxt", net)
	h5, err := filepath.Abs("testdata/torchnet.caffemodel.h5")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, dir, "extract-features", h5, "net.prototxt", "prob,pool", "out_prob,out_pool", "3", "lmdb")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, blob := range []string{"pool", "prob"} {
		checkFeatures(t, filepath.Join(dir, "out_"+blob), db.LMDB, fx, blob, 1e-5)
	}
}

// TestExtractFeaturesFailsWhole: a record the Data layer cannot decode,
// met in the second pass after the databases were begun, stops the run
// naming the source and key, and leaves no database, half or whole.
func TestExtractFeaturesFailsWhole(t *testing.T) {
	dir := t.TempDir()
	w, _ := extractSetup(t, dir)
	bad, err := db.Create(filepath.Join(dir, "bad"), db.LMDB)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if err := db.Scan(filepath.Join(dir, "images"), db.LMDB, func(k, v []byte) error {
		if i == 7 {
			v = []byte("not a Datum")
		}
		i++
		return bad.Put(k, v)
	}); err != nil {
		t.Fatal(err)
	}
	if err := bad.Close(); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "net.prototxt", strings.Replace(extractNet, "@TEST", filepath.Join(dir, "bad"), 1))
	code, out, errs := runCmd(t, dir, "extract-features", w, "net.prototxt", "pool,prob", "out_pool,out_prob", "3", "leveldb")
	if code == 0 {
		t.Fatalf("exit 0\n%s\n%s", out, errs)
	}
	t.Logf("stderr: %s", errs)
	for _, want := range []string{"bad", "00000007"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	assertEntries(t, dir, "bad", "images", "net.prototxt")
}

// TestExtractFeaturesWraps: passes past the source's 200 images go on
// from its first, as Caffe's Data layer wraps round: 41 passes of 5 write
// 205 records, the 201st the first's features under key 0000000200.
func TestExtractFeaturesWraps(t *testing.T) {
	dir := t.TempDir()
	w, _ := extractSetup(t, dir)
	code, out, errs := runCmd(t, dir, "extract-features", "--threads", "1", w, "net.prototxt", "prob", "out", "41", "lmdb")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var keys []string
	var vals [][]byte
	if err := db.Scan(filepath.Join(dir, "out"), db.LMDB, func(k, v []byte) error {
		keys, vals = append(keys, string(k)), append(vals, slices.Clone(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 205 || keys[200] != "0000000200" || keys[204] != "0000000204" {
		t.Fatalf("%d records, keys ... %q", len(keys), keys[max(0, len(keys)-5):])
	}
	for i := range 5 {
		if !bytes.Equal(vals[200+i], vals[i]) {
			t.Errorf("record %d is not record %d's features", 200+i, i)
		}
	}
	if bytes.Equal(vals[0], vals[1]) {
		t.Error("records 0 and 1 are equal: the comparison above proves nothing")
	}
}

// assertEntries fails unless dir holds exactly names: no half database,
// no temporary sibling.
func assertEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}

// TestExtractFeaturesRefuses: each bad argument is refused with a
// message naming it, a non-zero exit, and no database left behind.
func TestExtractFeaturesRefuses(t *testing.T) {
	_, gpuErr := cuda.Probe()
	for _, tc := range []struct {
		name string
		args []string // @W is the weights
		// want are substrings of stderr; extra are entries the case
		// makes in the folder before running.
		want  []string
		extra []string
		skip  bool
	}{
		{name: "unknown blob", args: []string{"@W", "net.prototxt", "pool,fc7", "a,b", "3", "lmdb"},
			want: []string{"extract_feature_blob_names", `unknown blob "fc7"`, "data, label, conv, pool, ip, prob, loss"}},
		{name: "unknown blob, flags", args: []string{"--weights", "@W", "--net", "net.prototxt", "--blobs", "fc7", "--out", "a", "--batches", "1"},
			want: []string{"--blobs", `unknown blob "fc7"`}},
		{name: "count mismatch", args: []string{"@W", "net.prototxt", "pool,prob", "a", "3", "lmdb"},
			want: []string{"extract_feature_blob_names names 2 blobs", "save_feature_dataset_names 1 databases", "must be equal"}},
		{name: "count mismatch, flags", args: []string{"--weights", "@W", "--net", "net.prototxt", "--blobs", "pool", "--out", "a,b", "--batches", "1"},
			want: []string{"--blobs names 1 blobs", "--out 2 databases"}},
		{name: "database exists", args: []string{"@W", "net.prototxt", "pool,prob", "a,old", "3", "lmdb"}, extra: []string{"old"},
			want: []string{"save_feature_dataset_names: old already exists", "Caffe's extract_features refuses"}},
		{name: "second database unmakable", args: []string{"@W", "net.prototxt", "pool,prob", "a,no/such", "3", "leveldb"},
			want: []string{"save_feature_dataset_names", "no/such", "does not exist"}},
		{name: "database named twice", args: []string{"@W", "net.prototxt", "pool,prob", "a,a", "3", "lmdb"},
			want: []string{"save_feature_dataset_names", "a is named twice"}},
		{name: "zero batches", args: []string{"@W", "net.prototxt", "pool", "a", "0", "lmdb"},
			want: []string{`num_mini_batches "0"`, "positive integer"}},
		{name: "negative batches", args: []string{"@W", "net.prototxt", "pool", "a", "-2", "lmdb"},
			want: []string{`num_mini_batches "-2"`}},
		{name: "batches not a number", args: []string{"--weights", "@W", "--net", "net.prototxt", "--blobs", "pool", "--out", "a", "--batches", "ten"},
			want: []string{`--batches "ten"`, "positive integer"}},
		{name: "bad db_type", args: []string{"@W", "net.prototxt", "pool", "a", "3", "rocksdb"},
			want: []string{"db_type", `"rocksdb"`, "lmdb or leveldb"}},
		{name: "bad backend", args: []string{"--weights", "@W", "--net", "net.prototxt", "--blobs", "pool", "--out", "a", "--batches", "1", "--backend", "hdf5"},
			want: []string{"--backend", `"hdf5"`}},
		{name: "too few arguments", args: []string{"@W", "net.prototxt", "pool", "a", "3"},
			want: []string{"5 arguments", "pretrained_net_param feature_extraction_proto_file"}},
		{name: "bad mode", args: []string{"@W", "net.prototxt", "pool", "a", "3", "lmdb", "TPU"},
			want: []string{`"TPU" where CPU or GPU goes`}},
		{name: "bad device", args: []string{"@W", "net.prototxt", "pool", "a", "3", "lmdb", "GPU", "-1"},
			want: []string{`DEVICE_ID "-1"`}},
		{name: "GPU without a GPU", args: []string{"@W", "net.prototxt", "pool", "a", "3", "lmdb", "GPU", "0"},
			want: []string{"GPU DEVICE_ID 0", "give CPU after db_type"}, skip: gpuErr == nil},
		{name: "GPU without a GPU, flags", args: []string{"--weights", "@W", "--net", "net.prototxt", "--blobs", "pool", "--out", "a", "--batches", "1", "--gpu", "0"},
			want: []string{"--gpu 0", "run without --gpu"}, skip: gpuErr == nil},
		{name: "a flag after the arguments, as gflags takes it", args: []string{"@W", "net.prototxt", "pool", "a", "3", "lmdb", "--blobs", "prob"},
			want: []string{"--blobs given with Caffe's positional arguments"}},
		{name: "a flag-like argument after --", args: []string{"@W", "net.prototxt", "pool", "a", "3", "--", "-x"},
			want: []string{"flag -x after the arguments"}},
		{name: "both forms", args: []string{"--blobs", "prob", "@W", "net.prototxt", "pool", "a", "3", "lmdb"},
			want: []string{"--blobs given with Caffe's positional arguments"}},
		{name: "flags missing", args: []string{"--weights", "@W", "--net", "net.prototxt"},
			want: []string{"--weights, --net, --blobs, --out and --batches are required"}},
		{name: "a snapshot", args: []string{"run.dsgdsnap", "net.prototxt", "pool", "a", "3", "lmdb"},
			want: []string{"pretrained_net_param run.dsgdsnap", ".caffemodel", "--snapshot-format caffe"}},
		{name: "weights missing", args: []string{"nosuch.caffemodel", "net.prototxt", "pool", "a", "3", "lmdb"},
			want: []string{"pretrained_net_param", "nosuch.caffemodel"}},
		{name: "net missing", args: []string{"@W", "nosuch.prototxt", "pool", "a", "3", "lmdb"},
			want: []string{"feature_extraction_proto_file nosuch.prototxt", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("this machine has a GPU")
			}
			dir := t.TempDir()
			w, _ := extractSetup(t, dir)
			for _, e := range tc.extra {
				if err := os.Mkdir(filepath.Join(dir, e), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"extract-features"}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "@W", w))
			}
			code, out, errs := runCmd(t, dir, args...)
			if code == 0 {
				t.Fatalf("exit 0\n%s\n%s", out, errs)
			}
			for _, want := range tc.want {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			assertEntries(t, dir, append([]string{"images", "net.prototxt"}, tc.extra...)...)
		})
	}
}

// FuzzExtractPositional: Caffe's positional arguments never panic the
// parser; what it accepts sets the six values from the first six words,
// and a GPU only from GPU with a non-negative device.
func FuzzExtractPositional(f *testing.F) {
	f.Add("w.caffemodel net.prototxt fc7 feat 10 lmdb", false)
	f.Add("w.caffemodel net.prototxt fc7,prob a,b 10 leveldb GPU 1", false)
	f.Add("w net b d 1 lmdb CPU 7", true)
	f.Add("a b c d e f TPU", false)
	f.Fuzz(func(t *testing.T, line string, flagGiven bool) {
		pos := strings.Fields(line)
		var v [7]string
		given := map[string]bool{"blobs": flagGiven}
		_, err := extractPositional(pos, given, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6])
		if err != nil {
			return
		}
		if flagGiven || len(pos) < 6 || len(pos) > 8 || !slices.Equal(v[:6], pos[:6]) {
			t.Fatalf("accepted %q (flag given %v) as %q", pos, flagGiven, v)
		}
		if v[6] != "" {
			if len(pos) < 7 || pos[6] != "GPU" {
				t.Fatalf("GPU %q from %q", v[6], pos)
			}
			if id, err := strconv.Atoi(v[6]); err != nil || id < 0 {
				t.Fatalf("device %q from %q", v[6], pos)
			}
		} else if len(pos) > 6 && pos[6] != "CPU" {
			t.Fatalf("mode %q accepted as the CPU", pos[6])
		}
	})
}
