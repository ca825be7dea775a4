package enginebench

import (
	"strings"
	"testing"
	"time"

	"dsgd/engine/model"
	"dsgd/engine/tensor"
	"dsgd/simulator/calib"
)

// TestPrintTimesColumns: the forward column starts at the same place on
// every row and under its heading, whether the names fit the default
// widths or not (GoogLeNet's deploy.prototxt in BVLC/caffe's
// models/bvlc_googlenet has 28-character layer names).
func TestPrintTimesColumns(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		layers []model.LayerInfo
	}{
		{"short names", []model.LayerInfo{
			{Name: "conv1", Type: "Convolution", Tops: []tensor.Shape{{1, 64, 112, 112}}, Forward: ms, Backward: ms, Backprop: true},
			{Name: "relu1", Type: "ReLU", Tops: []tensor.Shape{{1, 64, 112, 112}}, Forward: ms},
		}},
		{"long names", []model.LayerInfo{
			{Name: "conv1/7x7_s2", Type: "Convolution", Tops: []tensor.Shape{{1, 64, 112, 112}}, Forward: ms},
			{Name: "inception_3a/relu_3x3_reduce", Type: "ReLU", Tops: []tensor.Shape{{1, 96, 28, 28}}, Forward: ms},
			{Name: "x", Type: "SigmoidCrossEntropyLoss", Tops: []tensor.Shape{{}}, Forward: ms, Backward: ms, Backprop: true},
			{Name: "big", Type: "Input", Tops: []tensor.Shape{{1000, 1000, 1000, 1000, 7}}, Forward: ms},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			PrintTimes(&b, calib.Timing{Layers: tt.layers, Iters: 1, Wall: 3 * ms}, 0)
			lines := strings.Split(b.String(), "\n")
			var head string
			var rows []string
			for i, l := range lines {
				if strings.HasPrefix(l, "  layer ") {
					head, rows = l, lines[i+1:i+2+len(tt.layers)]
				}
			}
			if head == "" {
				t.Fatalf("no heading:\n%s", b.String())
			}
			// The heading's "forward" is right-aligned in 9 columns; each
			// layer's 1.000 and the total ends where it ends.
			end := strings.Index(head, "forward") + len("forward")
			for _, r := range rows {
				if len(r) < end || !strings.HasSuffix(r[:end], ".000") || r[end-6] != ' ' {
					t.Errorf("row's forward time does not end at column %d under the heading:\n%s\n%s", end, head, r)
				}
			}
		})
	}
}
