package caffemodel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"dsgd/caffepb"
	"dsgd/model"
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
}

// Layer is one layer of a trained net: its name, type and blobs.
type Layer struct {
	Name, Type string
	Bottom     []string
	Top        []string
	Blobs      []Blob
}

// Net is a trained net as a .caffemodel holds it.
type Net struct {
	Name   string
	Layers []Layer
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
// (BlobShape), as Caffe's current versions write them.
func Encode(n *Net) ([]byte, error) {
	np := &caffepb.NetParameter{Name: proto.String(n.Name)}
	for _, l := range n.Layers {
		lp := &caffepb.LayerParameter{Name: proto.String(l.Name), Type: proto.String(l.Type), Bottom: l.Bottom, Top: l.Top}
		for _, b := range l.Blobs {
			lp.Blobs = append(lp.Blobs, blobToProto(b))
		}
		np.Layer = append(np.Layer, lp)
	}
	return proto.Marshal(np)
}

func blobToProto(b Blob) *caffepb.BlobProto {
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

func writeAtomic(path string, b []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("caffemodel: cannot write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("caffemodel: writing %s: %w", path, err)
	}
	if _, err = f.Write(b); err != nil {
		return fmt.Errorf("caffemodel: writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("caffemodel: writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("caffemodel: writing %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("caffemodel: writing %s: %w", path, err)
	}
	return nil
}

// LayerInfo describes one layer of a net for FromNet.
type LayerInfo struct {
	Name, Type  string
	Bottom, Top []string
}

// FromNet makes a Net of layers (in order) whose blobs are the parameter
// blocks each layer owns, with values from params (laid out as blocks).
func FromNet(name string, layers []LayerInfo, blocks []model.Block, params []float32) *Net {
	n := &Net{Name: name}
	for _, li := range layers {
		l := Layer{Name: li.Name, Type: li.Type, Bottom: li.Bottom, Top: li.Top}
		for _, b := range blocks {
			if b.Layer == li.Name {
				l.Blobs = append(l.Blobs, Blob{Shape: slices.Clone([]int(b.Shape)), Data: params[b.Off : b.Off+b.Len()]})
			}
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
	// Kept lists the net's layers with parameters that the file lacks;
	// they keep their initial values.
	Kept []string
}

// CopyTrained copies the blobs of src's layers into params (laid out as
// blocks) by layer name, as Caffe's CopyTrainedLayersFrom. A layer whose
// blob count or a blob's shape differs is an error naming the layer and
// both shapes; so is a file of which no layer matches the net (a model of
// another net), naming the layers of each. file names src in errors.
func CopyTrained(src *Net, file string, blocks []model.Block, params []float32) (Report, error) {
	var rep Report
	byLayer := map[string][]model.Block{}
	var order []string
	for _, b := range blocks {
		if _, ok := byLayer[b.Layer]; !ok {
			order = append(order, b.Layer)
		}
		byLayer[b.Layer] = append(byLayer[b.Layer], b)
	}
	done := map[string]bool{}
	for _, l := range src.Layers {
		target, ok := byLayer[l.Name]
		if !ok {
			if len(l.Blobs) > 0 {
				rep.Ignored = append(rep.Ignored, l.Name)
			}
			continue
		}
		if done[l.Name] {
			continue
		}
		if len(l.Blobs) != len(target) {
			return rep, fmt.Errorf("%s: layer %q has %d blobs in the file but %d in the net", file, l.Name, len(l.Blobs), len(target))
		}
		for i, b := range l.Blobs {
			if !shapeEquals(b, target[i].Shape) {
				return rep, fmt.Errorf("%s: layer %q blob %d has shape %s in the file but %s in the net (did num_output or the input change? rename the layer to train it afresh)", file, l.Name, i, shapeString(b.Shape), shapeString(target[i].Shape))
			}
		}
		for i, b := range l.Blobs {
			copy(params[target[i].Off:target[i].Off+target[i].Len()], b.Data)
		}
		done[l.Name] = true
		rep.Copied = append(rep.Copied, l.Name)
	}
	for _, name := range order {
		if !done[name] {
			rep.Kept = append(rep.Kept, name)
		}
	}
	if len(rep.Copied) == 0 && len(order) > 0 {
		var have []string
		for _, l := range src.Layers {
			if len(l.Blobs) > 0 {
				have = append(have, l.Name)
			}
		}
		return rep, fmt.Errorf("%s matches no layer of this net: the file has weights for %s; the net has parameters in %s (a model of another net?)", file, listOrNone(have), listOrNone(order))
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
