package model_test

import (
	"strings"
	"testing"

	"dsgd/caffe/zoo"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// TestBadModelsRefused: the model faults that used to crash dsgd are
// errors naming the layer and the figure.
func TestBadModelsRefused(t *testing.T) {
	tensor.SetMemoryLimit(1 << 30)
	defer tensor.SetMemoryLimit(0)
	src, _, err := zoo.Get("lenet")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"pool stride 7", "    kernel_size: 2\n    stride: 2\n", "    kernel_size: 2\n    stride: 7\n", []string{`layer "pool1"`, "outside the input"}},
		{"pool stride 3", "    kernel_size: 2\n    stride: 2\n", "    kernel_size: 2\n    stride: 3\n", []string{`layer "pool1"`, "outside the input"}},
		{"kernel 2^31-1", "kernel_size: 5", "kernel_size: 2147483647", []string{`layer "conv1"`}},
		{"num_output 2e9", "num_output: 500", "num_output: 2000000000", []string{`layer "ip1"`, "TiB", "more than"}},
		{"num_output 9e18", "num_output: 500", "num_output: 9223372036854775807", []string{"ip1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mutated := strings.Replace(string(src), tc.from, tc.to, 1)
			if mutated == string(src) {
				t.Fatalf("%q not found in lenet", tc.from)
			}
			err := tryNet("lenet", mutated, zooInputs["lenet"], true)
			if err == nil {
				t.Fatal("built and ran")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCheckLabels(t *testing.T) {
	uses := []model.LabelUse{{Layer: `layer "loss"`, Classes: 3}}
	if err := model.CheckLabels([]float32{0, 1, 2}, uses); err != nil {
		t.Errorf("good labels: %v", err)
	}
	for _, bad := range [][]float32{{0, 3}, {-1}, {1.5}} {
		if err := model.CheckLabels(bad, uses); err == nil || !strings.Contains(err.Error(), `layer "loss"`) {
			t.Errorf("labels %v: %v, want an error naming the layer", bad, err)
		}
	}
	ign := []model.LabelUse{{Layer: "x", Classes: 3, HasIgnore: true, Ignore: 255}}
	if err := model.CheckLabels([]float32{255, 2}, ign); err != nil {
		t.Errorf("ignored label refused: %v", err)
	}
}
