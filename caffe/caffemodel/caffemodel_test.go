package caffemodel

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// The fixtures were written by scripts/caffe_fixtures.py with Python's
// protobuf: a logistic regression's InnerProduct "ip" (weight with legacy
// 4-D dims, bias with a BlobShape) and an extra layer "unused_fc".
const fixtures = "../../data/testdata/caffe"

func readF32(t *testing.T, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// logreg is the net the fixture fits: ip with a 4x144 weight and a bias.
func logreg() ([]model.Block, []float32) {
	blocks := []model.Block{
		{Name: "ip/0", Layer: "ip", Shape: tensor.Shape{4, 144}, Off: 0},
		{Name: "ip/1", Layer: "ip", Shape: tensor.Shape{4}, Off: 576},
	}
	return blocks, make([]float32, 580)
}

func TestPythonModel(t *testing.T) {
	w, b := readF32(t, "model_ip_0.f32"), readF32(t, "model_ip_1.f32")
	for _, file := range []string{"model.caffemodel", "model_v1.caffemodel"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join(fixtures, file)
			n, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			blocks, params := logreg()
			rep, err := CopyTrained(n, path, blocks, params)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Copied, []string{"ip"}) {
				t.Errorf("copied %v", rep.Copied)
			}
			if file == "model.caffemodel" && !slices.Equal(rep.Ignored, []string{"unused_fc"}) {
				t.Errorf("ignored %v, want unused_fc", rep.Ignored)
			}
			if !slices.Equal(params[:576], w) || !slices.Equal(params[576:], b) {
				t.Fatal("copied weights differ from the values Python wrote")
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	blocks, params := logreg()
	for i := range params {
		params[i] = float32(i) * 0.25
	}
	layers, err := Resolve([]LayerInfo{{Name: "ip", Type: "InnerProduct", Bottom: []string{"data"}, Top: []string{"ip"}}, {Name: "loss", Type: "SoftmaxWithLoss"}}, blocks)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.caffemodel")
	if err := Write(path, FromNet("logreg", "TRAIN", layers, params)); err != nil {
		t.Fatal(err)
	}
	n, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "logreg" || len(n.Layers) != 2 || n.Layers[1].Name != "loss" || len(n.Layers[1].Blobs) != 0 {
		t.Fatalf("read back %+v", n)
	}
	_, got := logreg()
	if _, err := CopyTrained(n, path, blocks, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, params) {
		t.Fatal("weights changed in the round trip")
	}

	hist := [][]float32{make([]float32, 580), make([]float32, 580)}
	for i := range hist[1] {
		hist[0][i], hist[1][i] = float32(i), -float32(i)
	}
	spath := filepath.Join(t.TempDir(), "m.solverstate")
	if err := WriteState(spath, &State{Iter: 42, LearnedNet: path, History: HistoryBlobs(hist, blocks), CurrentStep: 2}); err != nil {
		t.Fatal(err)
	}
	st, err := ReadState(spath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Iter != 42 || st.LearnedNet != path || st.CurrentStep != 2 || len(st.History) != 4 {
		t.Fatalf("state %+v", st)
	}
	back := [][]float32{make([]float32, 580), make([]float32, 580)}
	if err := SetHistory(spath, st.History, back, blocks); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back[0], hist[0]) || !slices.Equal(back[1], hist[1]) {
		t.Fatal("history changed in the round trip")
	}
	if err := SetHistory(spath, st.History[:3], back, blocks); err == nil {
		t.Fatal("SetHistory accepted 3 blobs for 4")
	}
}

func TestCopyErrors(t *testing.T) {
	path := filepath.Join(fixtures, "model.caffemodel")
	n, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		blocks []model.Block
		want   string
	}{
		{"shape", []model.Block{{Layer: "ip", Shape: tensor.Shape{10, 144}}, {Layer: "ip", Shape: tensor.Shape{10}, Off: 1440}},
			`layer "ip" blob 0 has shape 1x1x4x144 in the file but 10x144 in the net`},
		{"count", []model.Block{{Layer: "ip", Shape: tensor.Shape{4, 144}}},
			`layer "ip" has 2 blobs in the file but 1 in the net`},
		{"other net", []model.Block{{Layer: "conv1", Shape: tensor.Shape{2}}, {Layer: "fc8", Shape: tensor.Shape{2}, Off: 2}},
			"matches no layer of this net: the file has weights for ip, unused_fc; the net has parameters in conv1, fc8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CopyTrained(n, path, c.blocks, make([]float32, 3000))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path) {
				t.Fatalf("error %v\nwant %q", err, c.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"garbage", []byte("\xff\xff\xff\xff"), "is not a Caffe model"},
		{"empty", nil, "holds no layers"},
		// layer { name: "x" blobs { shape { dim: 3 } data: 1.0 } }
		{"count", []byte("\xa2\x06\x0f\x0a\x01x\x3a\x0a\x3a\x02\x08\x03\x2a\x04\x00\x00\x80\x3f"), `layer "x" blob 0: shape 3 holds 3 values but the blob has 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode("f.caffemodel", c.b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
