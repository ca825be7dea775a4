//go:build !purego

package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffemodel"
	"dsgd/caffe/caffepb"
	"dsgd/data"
	"dsgd/data/db"
	"dsgd/protocol/scheme"
)

// varNet is a tiny net for inputs of any size, as segmentation and
// detection nets are built: a convolution, global average pooling, an
// InnerProduct; its Data layers read at batch_size 1, so each record
// reshapes the net (Caffe's Data layer).
const varNet = `name: "varnet"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "train_lmdb" batch_size: 1 backend: LMDB } transform_param { scale: 0.01 mean_value: 100 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "test_lmdb" batch_size: 1 backend: LMDB } transform_param { scale: 0.01 mean_value: 100 } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv" convolution_param { num_output: 3 kernel_size: 3 } }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: AVE global_pooling: true } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 3 } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
`

const varSolver = `net: "net.prototxt"
test_iter: 3 test_interval: 1000 base_lr: 0.5 lr_policy: "fixed"
max_iter: 6 display: 0 random_seed: 1 snapshot_prefix: "out/var"
`

// varRecord is one record of the variable-shape databases: 2 channels
// of h×w bytes.
type varRecord struct {
	h, w  int
	label int
	pix   []byte
}

func varRecords(shapes [][2]int, seed int) []varRecord {
	var out []varRecord
	for i, s := range shapes {
		r := varRecord{h: s[0], w: s[1], label: i % 3, pix: make([]byte, 2*s[0]*s[1])}
		for j := range r.pix {
			r.pix[j] = byte((j*37 + i*101 + seed*53 + (j*j)%17) % 256)
		}
		out = append(out, r)
	}
	return out
}

// putVarDB writes recs as a LMDB of 2-channel raw Datums, keys %08d.
func putVarDB(t *testing.T, path string, recs []varRecord) {
	t.Helper()
	w, err := db.Create(path, db.LMDB)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		v, err := proto.Marshal(&caffepb.Datum{Channels: proto.Int32(2), Height: proto.Int32(int32(r.h)), Width: proto.Int32(int32(r.w)), Data: r.pix, Label: proto.Int32(int32(r.label))})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Put(fmt.Appendf(nil, "%08d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// varWeights are the net's weights as the reference holds them.
type varWeights struct {
	conv  [3][2][3][3]float64
	convB [3]float64
	ip    [3][3]float64
	ipB   [3]float64
}

// forward is the reference's forward pass of record r (Caffe's
// transform, convolution, global average pooling, InnerProduct, softmax
// loss) in float64, with the gradient of the loss when grad is set.
func (w *varWeights) forward(r varRecord, grad *varWeights) (loss float64, argmax int) {
	x := func(c, y, z int) float64 { return (float64(r.pix[(c*r.h+y)*r.w+z]) - 100) * 0.01 }
	oh, ow := r.h-2, r.w-2
	var g [3]float64
	for f := range 3 {
		for i := range oh {
			for j := range ow {
				y := w.convB[f]
				for c := range 2 {
					for u := range 3 {
						for v := range 3 {
							y += w.conv[f][c][u][v] * x(c, i+u, j+v)
						}
					}
				}
				g[f] += y / float64(oh*ow)
			}
		}
	}
	var z [3]float64
	zmax := math.Inf(-1)
	for o := range 3 {
		z[o] = w.ipB[o]
		for f := range 3 {
			z[o] += w.ip[o][f] * g[f]
		}
		if z[o] > zmax {
			zmax, argmax = z[o], o
		}
	}
	var sum float64
	for o := range 3 {
		sum += math.Exp(z[o] - zmax)
	}
	loss = -(z[r.label] - zmax - math.Log(sum))
	if grad == nil {
		return loss, argmax
	}
	var dz, dg [3]float64
	for o := range 3 {
		dz[o] = math.Exp(z[o]-zmax) / sum
		if o == r.label {
			dz[o]--
		}
		grad.ipB[o] += dz[o]
		for f := range 3 {
			grad.ip[o][f] += dz[o] * g[f]
			dg[f] += w.ip[o][f] * dz[o]
		}
	}
	for f := range 3 {
		dy := dg[f] / float64(oh*ow)
		grad.convB[f] += dy * float64(oh*ow)
		for c := range 2 {
			for u := range 3 {
				for v := range 3 {
					for i := range oh {
						for j := range ow {
							grad.conv[f][c][u][v] += dy * x(c, i+u, j+v)
						}
					}
				}
			}
		}
	}
	return loss, argmax
}

// flat lists the weights in the order of the net's blobs: conv weight,
// conv bias, ip weight, ip bias.
func (w *varWeights) flat() [][]float64 {
	var cw, iw []float64
	for f := range 3 {
		for c := range 2 {
			for u := range 3 {
				cw = append(cw, w.conv[f][c][u][:]...)
			}
		}
		iw = append(iw, w.ip[f][:]...)
	}
	return [][]float64{cw, w.convB[:], iw, w.ipB[:]}
}

// step is SGD without momentum over the mean of grads.
func (w *varWeights) step(lr float64, grads []*varWeights) {
	n := float64(len(grads))
	for _, g := range grads {
		for f := range 3 {
			for c := range 2 {
				for u := range 3 {
					for v := range 3 {
						w.conv[f][c][u][v] -= lr * g.conv[f][c][u][v] / n
					}
				}
			}
			w.convB[f] -= lr * g.convB[f] / n
			w.ipB[f] -= lr * g.ipB[f] / n
			for o := range 3 {
				w.ip[f][o] -= lr * g.ip[f][o] / n
			}
		}
	}
}

// TestTrainVariableShapes: `dsgd train --solver` on a database of records
// of differing shapes at batch_size 1 trains a net for inputs of any size
// (convolution, global pooling, InnerProduct), each iteration on the net
// of its record's shape with the weights every shape shares, and `dsgd
// test` tests the trained weights the same way: the per-iteration losses,
// the trained weights and the test loss and accuracy are those of a
// float64 reference computed here, record by record (SGD at lr 0.5 from
// the same initial weights, in file order), under seq, under sync-ring
// with two workers (each worker's record its own shape, the gradients
// averaged) and under seq with iter_size 2 (each pass its own shape), on
// one thread and on two (the exact sums' atoms then one after another,
// each on the net of its shape).
func TestTrainVariableShapes(t *testing.T) {
	dir := t.TempDir()
	train := varRecords([][2]int{{5, 5}, {4, 6}, {6, 4}, {5, 5}, {7, 5}, {3, 3}}, 0)
	test := varRecords([][2]int{{5, 6}, {4, 5}, {6, 6}}, 1)
	putVarDB(t, filepath.Join(dir, "train_lmdb"), train)
	putVarDB(t, filepath.Join(dir, "test_lmdb"), test)
	write(t, dir, "net.prototxt", varNet)
	write(t, dir, "solver.prototxt", varSolver)
	var init varWeights
	k := 0
	for f := range 3 {
		for c := range 2 {
			for u := range 3 {
				for v := range 3 {
					init.conv[f][c][u][v] = float64(float32(0.2 * math.Sin(float64(k)*1.3)))
					k++
				}
			}
		}
		init.convB[f] = float64(float32(0.05 * float64(f)))
		for o := range 3 {
			init.ip[f][o] = float64(float32(0.3 * math.Cos(float64(3*f+o)*0.7)))
		}
	}
	blob := func(shape []int, v []float64) caffemodel.Blob {
		b := caffemodel.Blob{Shape: shape}
		for _, x := range v {
			b.Data = append(b.Data, float32(x))
		}
		return b
	}
	iv := init.flat()
	if err := caffemodel.Write(filepath.Join(dir, "init.caffemodel"), &caffemodel.Net{Name: "varnet", Layers: []caffemodel.Layer{
		{Name: "conv", Type: "Convolution", Blobs: []caffemodel.Blob{blob([]int{3, 2, 3, 3}, iv[0]), blob([]int{3}, iv[1])}},
		{Name: "ip", Type: "InnerProduct", Blobs: []caffemodel.Blob{blob([]int{3, 3}, iv[2]), blob([]int{3}, iv[3])}},
	}}); err != nil {
		t.Fatal(err)
	}

	write(t, dir, "solver_iter2.prototxt", varSolver+"iter_size: 2\n")
	for _, c := range []struct {
		name, scheme string
		workers      int
		iterSize     int
		threads      int
	}{{"seq", "seq", 1, 1, 1}, {"sync-ring", "sync-ring", 2, 1, 1}, {"seq iter_size 2", "seq", 1, 2, 1}, {"seq iter_size 2 threads 2", "seq", 1, 2, 2}} {
		t.Run(c.name, func(t *testing.T) {
			// The reference: pass j of iteration t reads, on worker r,
			// position (t·iter_size + j)·W + r of the file order; the
			// update is the mean of every pass's gradient.
			w := init
			// losses holds rank 0's, the one its records show: the
			// mean over its passes.
			var losses []float64
			for it := range 6 {
				var grads []*varWeights
				var loss float64
				for j := range c.iterSize {
					for r := range c.workers {
						g := &varWeights{}
						l, _ := w.forward(train[((it*c.iterSize+j)*c.workers+r)%len(train)], g)
						if r == 0 {
							loss += l / float64(c.iterSize)
						}
						grads = append(grads, g)
					}
				}
				losses = append(losses, loss)
				w.step(0.5, grads)
			}
			var testLoss, testAcc float64
			for _, r := range test {
				l, am := w.forward(r, nil)
				testLoss += l / 3
				if am == r.label {
					testAcc += 1.0 / 3
				}
			}

			prefix := "out/" + strings.ReplaceAll(c.name, " ", "_")
			metrics := strings.ReplaceAll(c.name, " ", "_") + ".jsonl"
			solverFile := "solver.prototxt"
			if c.iterSize == 2 {
				solverFile = "solver_iter2.prototxt"
			}
			code, out, errs := runCmd(t, dir, "train", "--solver", solverFile, "--weights", "init.caffemodel", "--shuffle=false",
				"--scheme", c.scheme, "--workers", fmt.Sprint(c.workers), "--threads", fmt.Sprint(c.threads), "--snapshot-prefix", prefix, "--snapshot-format", "caffe", "--metrics", metrics)
			if code != 0 {
				t.Fatalf("train: exit %d\n%s\n%s", code, out, errs)
			}
			if !strings.Contains(out, "train_lmdb train at batch_size 1: each batch takes its record's shape and the net reshapes to it") {
				t.Errorf("the header does not say the net reshapes to each record:\n%s", out)
			}
			var got []float64
			for _, r := range readRecords(t, filepath.Join(dir, metrics)) {
				if r.Kind == "train" && r.Rank == 0 {
					got = append(got, r.Loss)
				}
			}
			if len(got) != 6 {
				t.Fatalf("%d train records of rank 0, want 6:\n%s", len(got), out)
			}
			for it, l := range got {
				if want := losses[it]; math.Abs(l-want) > 1e-5*max(1, want) {
					t.Errorf("iteration %d: loss %v, the reference's %v", it, l, want)
				}
			}
			m, err := caffemodel.Read(filepath.Join(dir, prefix+"_iter_6.caffemodel"))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			wv := w.flat()
			var blobs []caffemodel.Blob
			for _, l := range m.Layers {
				blobs = append(blobs, l.Blobs...)
			}
			if len(blobs) != 4 {
				t.Fatalf("snapshot holds %d blobs, want 4", len(blobs))
			}
			for b, want := range wv {
				for i, v := range want {
					if d := math.Abs(float64(blobs[b].Data[i]) - v); d > 1e-5 || math.IsNaN(d) {
						t.Fatalf("trained blob %d value %d: %v, the reference's %v (initial %v)", b, i, blobs[b].Data[i], v, iv[b][i])
					}
				}
			}
			if fmt.Sprint(wv) == fmt.Sprint(iv) {
				t.Fatal("the reference did not train")
			}
			code, out, errs = runCmd(t, dir, "test", "--solver", "solver.prototxt", "--weights", prefix+"_iter_6.caffemodel", "--threads", "1")
			if code != 0 {
				t.Fatalf("test: exit %d\n%s\n%s", code, out, errs)
			}
			// dsgd test prints four decimals.
			if l := number(t, out, "loss"); math.Abs(l-testLoss) > 1e-4 {
				t.Errorf("dsgd test: loss %v, the reference's %v\n%s", l, testLoss, out)
			}
			if a := number(t, out, "accuracy"); math.Abs(a-testAcc) > 1e-4 {
				t.Errorf("dsgd test: accuracy %v, the reference's %v\n%s", a, testAcc, out)
			}
			// caffe test's way: the TEST net alone, from its own data.
			code, out, errs = runCmd(t, dir, "test", "--model", "net.prototxt", "--weights", prefix+"_iter_6.caffemodel", "--iterations", "3", "--threads", "1")
			if code != 0 {
				t.Fatalf("test --model: exit %d\n%s\n%s", code, out, errs)
			}
			if l := number(t, out, "loss"); math.Abs(l-testLoss) > 1e-4 {
				t.Errorf("dsgd test --model: loss %v, the reference's %v\n%s", l, testLoss, out)
			}
			t.Logf("%s: losses %v (reference %v); test loss %v accuracy %v", c.name, got, losses, testLoss, testAcc)
		})
	}
}

// TestTrainVariableShapesEveryScheme: every scheme trains a net that
// reshapes to each record (batch_size 1 over records of differing
// shapes), each worker on the nets of its own records' shapes: it runs
// to the end and tests.
func TestTrainVariableShapesEveryScheme(t *testing.T) {
	dir := t.TempDir()
	putVarDB(t, filepath.Join(dir, "train_lmdb"), varRecords([][2]int{{5, 5}, {4, 6}, {6, 4}, {5, 5}, {7, 5}, {3, 3}}, 0))
	putVarDB(t, filepath.Join(dir, "test_lmdb"), varRecords([][2]int{{5, 6}, {4, 5}, {6, 6}}, 1))
	write(t, dir, "net.prototxt", varNet)
	write(t, dir, "solver.prototxt", varSolver)
	for _, in := range scheme.Schemes() {
		if raceEnabled && (in.Policy == scheme.Hogwild || in.Name == "hogwild") {
			continue // lock-free by design; the plain pass runs it
		}
		workers := "2"
		if in.Name == "seq" {
			workers = "1"
		}
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", in.Name, "--workers", workers, "--iters", "12", "--threads", "1", "--snapshot-prefix", "out/"+in.Name)
		if code != 0 || !strings.Contains(out, "final test:") {
			t.Errorf("%s: exit %d\n%s\n%s", in.Name, code, out, errs)
		}
	}
}

// TestVariableShapesRefused: what Caffe's DataTransformer or layers CHECK
// over records of differing shapes stops dsgd train with exit 1 and a
// message naming the database's key and the setting or layer at fault:
// a mean_file (one shape) at batch_size 1, a larger batch_size, and a
// net whose params depend on the input's size.
func TestVariableShapesRefused(t *testing.T) {
	dir := t.TempDir()
	putVarDB(t, filepath.Join(dir, "train_lmdb"), varRecords([][2]int{{5, 5}, {4, 6}, {5, 5}}, 0))
	putVarDB(t, filepath.Join(dir, "test_lmdb"), varRecords([][2]int{{5, 5}}, 1))
	mean := filepath.Join(dir, "mean.binaryproto")
	one, c, h, w := int32(1), int32(2), int32(5), int32(5)
	if err := data.WriteMean(mean, &caffepb.BlobProto{Num: &one, Channels: &c, Height: &h, Width: &w, Data: make([]float32, 50)}); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "solver.prototxt", varSolver)
	for _, c := range []struct {
		name string
		net  string
		want []string
	}{
		{"mean_file", strings.ReplaceAll(varNet, "mean_value: 100", `mean_file: "`+mean+`"`), []string{"train_lmdb", `key "00000001"`, "mean_file " + mean + " is 1x2x5x5 but the record is 2x4x6"}},
		{"batch_size 2", strings.Replace(varNet, "batch_size: 1", "batch_size: 2", 1), []string{"train_lmdb", `key "00000001"`, "differs from the first record's 2x5x5", "need batch_size 1"}},
		{"InnerProduct on the data", strings.Replace(strings.Replace(varNet, `bottom: "pool" top: "ip"`, `bottom: "data" top: "ip"`, 1), `layer { name: "pool"`, `# layer { name: "pool"`, 1), []string{"TRAIN net for the batch's input data 1x2x4x6", "Caffe's Data layer at batch_size 1 reshapes the net", `"ip"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			write(t, dir, "net.prototxt", c.net)
			code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--shuffle=false", "--snapshot-prefix", "none")
			for _, w := range c.want {
				if code != 1 || !strings.Contains(errs, w) {
					t.Fatalf("exit %d, want 1 and %q in stderr\n%s\n%s", code, w, out, errs)
				}
			}
			if strings.Contains(errs, "panic") {
				t.Fatalf("panicked:\n%s", errs)
			}
			t.Log(strings.TrimSpace(errs))
		})
	}
}

// TestExtractFeaturesVariableShapes: extract_features over a TEST Data
// layer at batch_size 1 whose records differ in shape reshapes the net
// to each record, as Caffe's does, and writes each record's features in
// its own shape: conv's (h−2)×(w−2) planes, and pool's global means of
// them, record by record.
func TestExtractFeaturesVariableShapes(t *testing.T) {
	dir := t.TempDir()
	test := varRecords([][2]int{{5, 6}, {4, 5}, {6, 6}}, 1)
	putVarDB(t, filepath.Join(dir, "test_lmdb"), test)
	write(t, dir, "net.prototxt", varNet)
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 0.01 * float32(i%7+1)
		}
		return v
	}
	if err := caffemodel.Write(filepath.Join(dir, "w.caffemodel"), &caffemodel.Net{Name: "varnet", Layers: []caffemodel.Layer{
		{Name: "conv", Type: "Convolution", Blobs: []caffemodel.Blob{{Shape: []int{3, 2, 3, 3}, Data: ones(54)}, {Shape: []int{3}, Data: ones(3)}}},
		{Name: "ip", Type: "InnerProduct", Blobs: []caffemodel.Blob{{Shape: []int{3, 3}, Data: ones(9)}, {Shape: []int{3}, Data: ones(3)}}},
	}}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, dir, "extract_features", "w.caffemodel", "net.prototxt", "conv,pool", "out_conv,out_pool", "3", "lmdb")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	read := func(name string) []*caffepb.Datum {
		var ds []*caffepb.Datum
		if err := db.Scan(filepath.Join(dir, name), db.LMDB, func(k, v []byte) error {
			d, err := data.DecodeDatum(v)
			if err == nil && string(k) != fmt.Sprintf("%010d", len(ds)) {
				err = fmt.Errorf("key %q at record %d", k, len(ds))
			}
			ds = append(ds, d)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ds
	}
	conv, pool := read("out_conv"), read("out_pool")
	if len(conv) != 3 || len(pool) != 3 {
		t.Fatalf("%d conv and %d pool records, want 3 each", len(conv), len(pool))
	}
	for i, r := range test {
		c, p := conv[i], pool[i]
		if c.GetChannels() != 3 || int(c.GetHeight()) != r.h-2 || int(c.GetWidth()) != r.w-2 || p.GetChannels() != 3 || p.GetHeight() != 1 || p.GetWidth() != 1 {
			t.Fatalf("record %d (%dx%d): conv %dx%dx%d, pool %dx%dx%d; want 3x%dx%d and 3x1x1", i, r.h, r.w,
				c.GetChannels(), c.GetHeight(), c.GetWidth(), p.GetChannels(), p.GetHeight(), p.GetWidth(), r.h-2, r.w-2)
		}
		plane := (r.h - 2) * (r.w - 2)
		for ch := range 3 {
			var sum float64
			for _, v := range c.FloatData[ch*plane : (ch+1)*plane] {
				sum += float64(v)
			}
			if got, want := float64(p.FloatData[ch]), sum/float64(plane); math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("record %d channel %d: pool %v, the mean of its conv plane %v", i, ch, got, want)
			}
		}
	}
}
