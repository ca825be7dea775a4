package caffemodel

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// The siamese fixtures of testdata were written by
// scripts/caffe_shared_fixtures.py with Python's protobuf and h5py in the
// layout of Caffe's writers; siamese.json holds their values.
type siameseMeta struct {
	W, B, W2, B2 []float32
	History      [][]float32
	Iter         int
	CurrentStep  int    `json:"current_step"`
	LearnedNet   string `json:"learned_net"`
}

func readSiamese(t *testing.T) siameseMeta {
	t.Helper()
	b, err := os.ReadFile("testdata/siamese.json")
	if err != nil {
		t.Fatal(err)
	}
	var m siameseMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// siamese is the fixtures' net as model.Build lays it out: ip1 owns the
// shared blocks "w" and "b", ip1_p names them too, ip2 owns its own.
func siamese(t *testing.T) ([]NetLayer, []model.Block) {
	t.Helper()
	blocks := []model.Block{
		{Name: "w", Layer: "ip1", Shape: tensor.Shape{3, 4}, Off: 0, LRMult: 1, DecayMult: 1},
		{Name: "b", Layer: "ip1", Shape: tensor.Shape{3}, Off: 12, LRMult: 2},
		{Name: "ip2/0", Layer: "ip2", Shape: tensor.Shape{2, 3}, Off: 15, LRMult: 1, DecayMult: 1},
		{Name: "ip2/1", Layer: "ip2", Shape: tensor.Shape{2}, Off: 21, LRMult: 1, DecayMult: 1},
	}
	shared := []model.ParamSpec{{Name: "w", LRMult: 1, DecayMult: 1}, {Name: "b", LRMult: 2, DecayMult: 0}}
	layers, err := Resolve([]LayerInfo{
		{Name: "data", Type: "Input", Top: []string{"a", "b"}},
		{Name: "ip1", Type: "InnerProduct", Bottom: []string{"a"}, Top: []string{"fa"}, Params: shared},
		{Name: "ip1_p", Type: "InnerProduct", Bottom: []string{"b"}, Top: []string{"fb"}, Params: shared},
		{Name: "ip2", Type: "InnerProduct", Bottom: []string{"fa"}, Top: []string{"out"}},
	}, blocks)
	if err != nil {
		t.Fatal(err)
	}
	return layers, blocks
}

func (m siameseMeta) params() []float32 {
	return slices.Concat(m.W, m.B, m.W2, m.B2)
}

func TestResolveShared(t *testing.T) {
	layers, _ := siamese(t)
	var got []string
	for _, l := range layers {
		var bs []string
		for j, b := range l.Blocks {
			o := ""
			if !l.Owner[j] {
				o = "(shared)"
			}
			bs = append(bs, b.Name+o)
		}
		got = append(got, l.Name+":"+strings.Join(bs, ","))
	}
	want := []string{"data:", "ip1:w,b", "ip1_p:w(shared),b(shared)", "ip2:ip2/0,ip2/1"}
	if !slices.Equal(got, want) {
		t.Fatalf("Resolve: %q\nwant %q", got, want)
	}
	_, blocks := siamese(t)
	for _, c := range []struct {
		name   string
		layers []LayerInfo
		want   string
	}{
		{"unknown param", []LayerInfo{{Name: "ip1", Params: []model.ParamSpec{{Name: "v"}}}}, `layer "ip1" param 0 (v) has no parameter block`},
		{"orphan block", []LayerInfo{{Name: "ip1", Params: []model.ParamSpec{{Name: "w"}, {Name: "b"}}}}, `parameter block ip2/0 of layer "ip2" belongs to no layer`},
	} {
		if _, err := Resolve(c.layers, blocks); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// TestSharedProto: dsgd writes a shared-param net's .caffemodel as Caffe's
// Net::ToProto does (message-equal to the Python-written fixture: ip1_p
// holds w and b in full), and reads Caffe's back into the shared blocks.
func TestSharedProto(t *testing.T) {
	m := readSiamese(t)
	layers, _ := siamese(t)
	b, err := Encode(FromNet("siamese", "TRAIN", layers, m.params()))
	if err != nil {
		t.Fatal(err)
	}
	var got, want caffepb.NetParameter
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	fb, err := os.ReadFile("testdata/siamese.caffemodel")
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(fb, &want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, &want) {
		t.Fatalf("dsgd's .caffemodel differs from Caffe's layout:\n%v\nwant\n%v", &got, &want)
	}

	n, err := Read("testdata/siamese.caffemodel")
	if err != nil {
		t.Fatal(err)
	}
	params := make([]float32, 23)
	rep, err := CopyTrainedNet(n, "siamese.caffemodel", layers, params)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(params, m.params()) || !slices.Equal(rep.Copied, []string{"ip1", "ip1_p", "ip2"}) || len(rep.Kept) != 0 || len(rep.Ignored) != 0 {
		t.Fatalf("copied %v kept %v ignored %v; params %v", rep.Copied, rep.Kept, rep.Ignored, params)
	}

	// As Caffe copies layer by layer, a later layer's copy of a shared
	// blob wins; a file with only the sharing layer fills the blob too.
	n.Layers[2].Blobs[0].Data = slices.Repeat([]float32{9}, 12)
	if _, err := CopyTrainedNet(n, "f", layers, params); err != nil || params[0] != 9 || params[11] != 9 {
		t.Fatalf("later layer's shared blob: err %v, w %v", err, params[:12])
	}
	only := &Net{Layers: []Layer{n.Layers[2], n.Layers[3]}}
	params = make([]float32, 23)
	rep, err = CopyTrainedNet(only, "f", layers, params)
	if err != nil || len(rep.Kept) != 0 || params[12] != m.B[0] {
		t.Fatalf("file with ip1_p only: err %v kept %v params %v", err, rep.Kept, params)
	}
	// A file of ip2 alone leaves the shared blobs as they were.
	rep, err = CopyTrainedNet(&Net{Layers: []Layer{n.Layers[3]}}, "f", layers, make([]float32, 23))
	if err != nil || !slices.Equal(rep.Kept, []string{"ip1", "ip1_p"}) {
		t.Fatalf("file with ip2 only: err %v kept %v", err, rep.Kept)
	}
	// Caffe checks the blob count of every layer it finds by name,
	// layers without parameters included.
	bad := &Net{Layers: []Layer{{Name: "data", Blobs: []Blob{{Shape: []int{1}, Data: []float32{1}}}}, n.Layers[1]}}
	if _, err := CopyTrainedNet(bad, "f.caffemodel", layers, make([]float32, 23)); err == nil || !strings.Contains(err.Error(), `layer "data" has 1 blobs in the file but 0 in the net`) {
		t.Fatalf("blobs for a layer without parameters: %v", err)
	}
}
