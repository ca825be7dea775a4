package caffemodel

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/engine/model"
	"dsgd/internal/atomicfile"
)

// Blob is one weight blob of a layer.
type Blob struct {
	// Shape is the blob's shape; for a blob stored with Caffe's legacy
	// num/channels/height/width, the four of them.
	Shape []int
	// Legacy says Shape came from num/channels/height/width, which Caffe
	// compares with a net's blob padded to four dimensions.
	Legacy bool
	// Data holds the values, row-major.
	Data []float32
	// Shared marks a blob the layer shares with an earlier layer (by
	// param name): a .caffemodel holds it in full in every layer, as
	// Caffe's Net::ToProto writes it, but an HDF5 model only in its
	// owner's group.
	Shared bool
	// Absent marks a blob an HDF5 model lacks (a shared one): its place
	// is kept so that blob indices stay Caffe's.
	Absent bool
}

// Layer is one layer of a trained net: its name, type and blobs.
type Layer struct {
	Name, Type string
	Bottom     []string
	Top        []string
	// Phase is "TRAIN" or "TEST" (the phase of the net written), or "".
	Phase string
	// Params are the layer's param { } specs.
	Params []model.ParamSpec
	Blobs  []Blob
}

// Net is a trained net as a .caffemodel holds it.
type Net struct {
	Name   string
	Layers []Layer
	// HDF5 says the net came from an HDF5 model (.caffemodel.h5), whose
	// layers are in name order and lack their shared blobs; CopyTrained
	// copies it as Caffe's CopyTrainedLayersFromHDF5 does.
	HDF5 bool
}

// maxDims bounds a blob's dimensions.
const maxDims = 32

// Decode decodes a .caffemodel (a binary NetParameter, with layers in
// either Caffe's current or V1 format). name prefixes errors.
func Decode(name string, b []byte) (*Net, error) {
	var np caffepb.NetParameter
	if err := proto.Unmarshal(b, &np); err != nil {
		return nil, fmt.Errorf("%s is not a Caffe model (binary NetParameter): %v", name, err)
	}
	n := &Net{Name: np.GetName()}
	add := func(lname, typ string, bottom, top []string, blobs []*caffepb.BlobProto) error {
		l := Layer{Name: lname, Type: typ, Bottom: bottom, Top: top}
		for i, bp := range blobs {
			bl, err := blobFromProto(bp)
			if err != nil {
				return fmt.Errorf("%s: layer %q blob %d: %v", name, lname, i, err)
			}
			l.Blobs = append(l.Blobs, bl)
		}
		n.Layers = append(n.Layers, l)
		return nil
	}
	for _, l := range np.Layer {
		if err := add(l.GetName(), l.GetType(), l.Bottom, l.Top, l.Blobs); err != nil {
			return nil, err
		}
	}
	for _, l := range np.Layers {
		if err := add(l.GetName(), "V1:"+strconv.Itoa(int(l.GetType())), l.Bottom, l.Top, l.Blobs); err != nil {
			return nil, err
		}
	}
	if len(n.Layers) == 0 {
		return nil, fmt.Errorf("%s holds no layers: not a Caffe model (.caffemodel)?", name)
	}
	return n, nil
}

// blobFromProto checks and converts one BlobProto.
func blobFromProto(bp *caffepb.BlobProto) (Blob, error) {
	var b Blob
	if bp.Shape != nil {
		if len(bp.Shape.Dim) > maxDims {
			return b, fmt.Errorf("%d dimensions, at most %d", len(bp.Shape.Dim), maxDims)
		}
		for _, d := range bp.Shape.Dim {
			if d < 0 || d > 1<<40 {
				return b, fmt.Errorf("bad dimension %d", d)
			}
			b.Shape = append(b.Shape, int(d))
		}
	} else {
		b.Legacy = true
		b.Shape = []int{int(bp.GetNum()), int(bp.GetChannels()), int(bp.GetHeight()), int(bp.GetWidth())}
		for _, d := range b.Shape {
			if d < 0 {
				return b, fmt.Errorf("negative dimension in %s", shapeString(b.Shape))
			}
		}
	}
	count := 1
	for _, d := range b.Shape {
		if d != 0 && count > (1<<40)/d {
			return b, fmt.Errorf("shape %s is too large", shapeString(b.Shape))
		}
		count *= d
	}
	switch {
	case len(bp.Data) > 0 && len(bp.DoubleData) > 0:
		return b, errors.New("both data and double_data are set")
	case len(bp.DoubleData) > 0:
		b.Data = make([]float32, len(bp.DoubleData))
		for i, v := range bp.DoubleData {
			b.Data[i] = float32(v)
		}
	default:
		b.Data = bp.Data
	}
	if len(b.Data) != count {
		return b, fmt.Errorf("shape %s holds %d values but the blob has %d", shapeString(b.Shape), count, len(b.Data))
	}
	return b, nil
}

// Read reads and decodes the .caffemodel at path.
func Read(path string) (*Net, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("caffemodel: %w", err)
	}
	return Decode(path, b)
}

// Encode encodes n as a binary NetParameter, every blob with its shape
// (BlobShape), as Caffe's current versions write them: every layer with
// all its blobs, shared ones included (Net::ToProto has each layer write
// its blobs, and a shared blob is one of each layer that names it).
func Encode(n *Net) ([]byte, error) {
	np := &caffepb.NetParameter{Name: proto.String(n.Name)}
	for _, l := range n.Layers {
		lp := &caffepb.LayerParameter{Name: proto.String(l.Name), Type: proto.String(l.Type), Bottom: l.Bottom, Top: l.Top}
		switch l.Phase {
		case "TRAIN":
			lp.Phase = caffepb.Phase_TRAIN.Enum()
		case "TEST":
			lp.Phase = caffepb.Phase_TEST.Enum()
		}
		for _, ps := range l.Params {
			pp := &caffepb.ParamSpec{LrMult: proto.Float32(ps.LRMult), DecayMult: proto.Float32(ps.DecayMult)}
			if ps.Name != "" {
				pp.Name = proto.String(ps.Name)
			}
			lp.Param = append(lp.Param, pp)
		}
		for i, b := range l.Blobs {
			if b.Absent {
				return nil, fmt.Errorf("layer %q blob %d is absent (an HDF5 model's shared blob): copy it into a net first", l.Name, i)
			}
			lp.Blobs = append(lp.Blobs, blobToProto(b))
		}
		np.Layer = append(np.Layer, lp)
	}
	return proto.Marshal(np)
}

// blobToProto encodes b with its shape as a BlobShape, or, for a blob
// read with Caffe's legacy 4-D num/channels/height/width, as read.
func blobToProto(b Blob) *caffepb.BlobProto {
	if b.Legacy && len(b.Shape) == 4 {
		return &caffepb.BlobProto{Num: proto.Int32(int32(b.Shape[0])), Channels: proto.Int32(int32(b.Shape[1])),
			Height: proto.Int32(int32(b.Shape[2])), Width: proto.Int32(int32(b.Shape[3])), Data: b.Data}
	}
	dims := make([]int64, len(b.Shape))
	for i, d := range b.Shape {
		dims[i] = int64(d)
	}
	return &caffepb.BlobProto{Shape: &caffepb.BlobShape{Dim: dims}, Data: b.Data}
}

// Write writes n to path as a .caffemodel, through a temporary file so
// that a failure leaves no partial file.
func Write(path string, n *Net) error {
	b, err := Encode(n)
	if err != nil {
		return fmt.Errorf("caffemodel: encoding %s: %w", path, err)
	}
	return writeAtomic(path, b)
}

// writeAtomic writes b to path whole or not at all, readable by all.
func writeAtomic(path string, b []byte) error {
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("caffemodel: writing %s: %w", path, err)
	}
	return nil
}

// FromNet makes the Net of a built net's layers (see Resolve), phase
// "TRAIN" or "TEST", with values from params: every layer with each of
// its blobs, a shared blob (marked Shared) in every layer that uses it.
func FromNet(name, phase string, layers []NetLayer, params []float32) *Net {
	n := &Net{Name: name}
	for _, nl := range layers {
		l := Layer{Name: nl.Name, Type: nl.Type, Bottom: nl.Bottom, Top: nl.Top, Phase: phase, Params: nl.Params}
		for j, b := range nl.Blocks {
			l.Blobs = append(l.Blobs, Blob{Shape: slices.Clone([]int(b.Shape)), Data: params[b.Off : b.Off+b.Len()], Shared: !nl.Owner[j]})
		}
		n.Layers = append(n.Layers, l)
	}
	return n
}

// Report says what CopyTrained did.
type Report struct {
	// Copied lists the layers whose blobs were copied.
	Copied []string
	// Ignored lists the file's layers with blobs that the net lacks.
	Ignored []string
	// Kept lists the net's layers with a param blob that no layer of the
	// file wrote; those blobs keep their initial values.
	Kept []string
}

// CopyTrained copies src into params (laid out as blocks) by layer name,
// knowing the net's layers only from its blocks (no shared params); see
// CopyTrainedNet.
func CopyTrained(src *Net, file string, blocks []model.Block, params []float32) (Report, error) {
	return CopyTrainedNet(src, file, blockLayers(blocks), params)
}

// CopyTrainedNet copies the blobs of src's layers into params by layer
// name, as Caffe's Net::CopyTrainedLayersFrom does; layers are the net's
// (see Resolve). Each layer of the file, in order, is copied into the
// net's layer of that name (the first of that name; the last for an HDF5
// model, whose layers come in name order), blob by blob; a shared blob is
// written through whichever layer names it, so a later layer's copy
// wins. A layer of the file that the net lacks is ignored. A blob count
// that differs is an error, except that an HDF5 model may lack the blobs
// a layer shares (Caffe writes them once, in their owner's group); so is
// a blob whose shape differs (naming the layer and both shapes), and a
// file of which no layer matches the net (a model of another net), naming
// the layers of each. file names src in errors.
func CopyTrainedNet(src *Net, file string, layers []NetLayer, params []float32) (Report, error) {
	var rep Report
	at := map[string]int{}
	for i, l := range layers {
		if _, ok := at[l.Name]; !ok || src.HDF5 {
			at[l.Name] = i
		}
	}
	written := map[int]bool{} // block offsets written
	copied := map[string]bool{}
	for _, l := range src.Layers {
		have := 0
		for _, b := range l.Blobs {
			if !b.Absent {
				have++
			}
		}
		ti, ok := at[l.Name]
		if !ok {
			if have > 0 {
				rep.Ignored = append(rep.Ignored, l.Name)
			}
			continue
		}
		target := layers[ti]
		if src.HDF5 {
			if len(l.Blobs) > len(target.Blocks) {
				return rep, fmt.Errorf("%s: layer %q has %d blobs in the file but %d in the net", file, l.Name, len(l.Blobs), len(target.Blocks))
			}
			for j := range target.Blocks {
				if (j >= len(l.Blobs) || l.Blobs[j].Absent) && target.Owner[j] {
					return rep, fmt.Errorf("%s: layer %q lacks blob %d (dataset /data/%s/%d), which the layer owns in the net", file, l.Name, j, l.Name, j)
				}
			}
		} else if len(l.Blobs) != len(target.Blocks) {
			return rep, fmt.Errorf("%s: layer %q has %d blobs in the file but %d in the net", file, l.Name, len(l.Blobs), len(target.Blocks))
		}
		for i, b := range l.Blobs {
			if !b.Absent && !shapeEquals(b, target.Blocks[i].Shape) {
				return rep, fmt.Errorf("%s: layer %q blob %d has shape %s in the file but %s in the net (did num_output or the input change? rename the layer to train it afresh)", file, l.Name, i, shapeString(b.Shape), shapeString(target.Blocks[i].Shape))
			}
		}
		for i, b := range l.Blobs {
			if b.Absent {
				continue
			}
			tb := target.Blocks[i]
			copy(params[tb.Off:tb.Off+tb.Len()], b.Data)
			written[tb.Off] = true
		}
		if have > 0 && !copied[l.Name] {
			copied[l.Name] = true
			rep.Copied = append(rep.Copied, l.Name)
		}
	}
	var withParams []string
	for _, l := range layers {
		if len(l.Blocks) == 0 {
			continue
		}
		withParams = append(withParams, l.Name)
		for _, b := range l.Blocks {
			if !written[b.Off] {
				rep.Kept = append(rep.Kept, l.Name)
				break
			}
		}
	}
	if len(rep.Copied) == 0 && len(withParams) > 0 {
		var have []string
		for _, l := range src.Layers {
			for _, b := range l.Blobs {
				if !b.Absent {
					have = append(have, l.Name)
					break
				}
			}
		}
		return rep, fmt.Errorf("%s matches no layer of this net: the file has weights for %s; the net has parameters in %s (a model of another net?)", file, listOrNone(have), listOrNone(withParams))
	}
	return rep, nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// shapeEquals compares a file's blob with a net's, as Caffe's
// Blob::ShapeEquals: a legacy 4-D shape matches the net's shape padded
// with leading ones to four dimensions.
func shapeEquals(b Blob, want []int) bool {
	if !b.Legacy {
		return slices.Equal(b.Shape, want)
	}
	if len(want) > 4 {
		return false
	}
	padded := []int{1, 1, 1, 1}
	copy(padded[4-len(want):], want)
	return slices.Equal(b.Shape, padded)
}

func shapeString(s []int) string {
	if len(s) == 0 {
		return "()"
	}
	p := make([]string, len(s))
	for i, d := range s {
		p[i] = strconv.Itoa(d)
	}
	return strings.Join(p, "x")
}
