package layers

import (
	"fmt"

	"dsgd/engine/tensor"
)

// ParameterConfig is Caffe's ParameterParameter: the shape of the layer's
// one param blob.
type ParameterConfig struct {
	Shape []int
}

// Type returns "Parameter".
func (*ParameterConfig) Type() string { return "Parameter" }

// Build returns a Parameter layer: no bottom, one top that is its one
// param blob of shape Shape. Caffe shares the blob's data and diff with the
// top; here Forward copies the param's data to the top and Backward adds
// the top's diff to the param's diff. Caffe fills the blob with nothing
// (zeros) and the layer has no filler, so the param starts at 0 unless a
// .caffemodel gives it.
func (c *ParameterConfig) Build(Context) (Layer, error) {
	for _, d := range c.Shape {
		if d < 0 {
			return nil, fmt.Errorf("layers: Parameter: negative dimension in shape %v", c.Shape)
		}
	}
	return &parameterLayer{shape: append([]int(nil), c.Shape...)}, nil
}

type parameterLayer struct {
	shape  []int
	params []Param
}

func (*parameterLayer) Type() string      { return "Parameter" }
func (l *parameterLayer) Params() []Param { return l.params }

func (l *parameterLayer) Setup(bottom, top []*tensor.Blob) error {
	if err := checkBlobCount("Parameter", bottom, top, 0, 0, 1, 1); err != nil {
		return err
	}
	l.params = []Param{{Blob: tensor.NewBlob("parameter", l.shape...)}}
	return l.Reshape(bottom, top)
}

func (l *parameterLayer) Reshape(_, top []*tensor.Blob) error {
	top[0].Reshape(l.shape...)
	return nil
}

func (l *parameterLayer) Forward(_, top []*tensor.Blob) {
	copy(top[0].Data, l.params[0].Blob.Data)
}

func (l *parameterLayer) Backward(top []*tensor.Blob, _ []bool, _ []*tensor.Blob) {
	tensor.AddTo(l.params[0].Blob.Diff, top[0].Diff)
}
