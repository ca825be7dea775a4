package prototxt_test

import (
	"fmt"

	"dsgd/caffe/prototxt"
)

func ExampleParse() {
	src := []byte(`name: "LeNet"  # a comment
layer {
  name: 'conv1'
  convolution_param { kernel_size: [5, 3] weight_filler: { type: "xavier" } }
}`)
	m, err := prototxt.Parse("lenet.prototxt", src)
	if err != nil {
		fmt.Println(err)
		return
	}
	layer := m.Get("layer")[0].Msg
	conv := layer.Get("convolution_param")[0].Msg
	for _, f := range conv.Get("kernel_size") {
		k, _ := f.Int()
		fmt.Println(f.Pos, f.Name, k)
	}
	_, err = prototxt.Parse("bad.prototxt", []byte("layer {\n  name \"x\"\n}"))
	fmt.Println(err)
	// Output:
	// lenet.prototxt:4:23 kernel_size 5
	// lenet.prototxt:4:23 kernel_size 3
	// bad.prototxt:2:8: expected ':' or '{', found string "x"
}
