package layers

// Placeholders until each layer lands; delete an entry when its layer file
// defines Type and Build.

import "fmt"

// Type returns "ReLU".
func (*ReLUConfig) Type() string { return "ReLU" }

// Build is not implemented yet.
func (*ReLUConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: ReLU not implemented")
}

// Type returns "Sigmoid".
func (*SigmoidConfig) Type() string { return "Sigmoid" }

// Build is not implemented yet.
func (*SigmoidConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Sigmoid not implemented")
}

// Type returns "TanH".
func (*TanHConfig) Type() string { return "TanH" }

// Build is not implemented yet.
func (*TanHConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: TanH not implemented")
}

// Type returns "Dropout".
func (*DropoutConfig) Type() string { return "Dropout" }

// Build is not implemented yet.
func (*DropoutConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Dropout not implemented")
}

// Type returns "Concat".
func (*ConcatConfig) Type() string { return "Concat" }

// Build is not implemented yet.
func (*ConcatConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Concat not implemented")
}

// Type returns "Eltwise".
func (*EltwiseConfig) Type() string { return "Eltwise" }

// Build is not implemented yet.
func (*EltwiseConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Eltwise not implemented")
}

// Type returns "Flatten".
func (*FlattenConfig) Type() string { return "Flatten" }

// Build is not implemented yet.
func (*FlattenConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Flatten not implemented")
}

// Type returns "BatchNorm".
func (*BatchNormConfig) Type() string { return "BatchNorm" }

// Build is not implemented yet.
func (*BatchNormConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: BatchNorm not implemented")
}

// Type returns "Scale".
func (*ScaleConfig) Type() string { return "Scale" }

// Build is not implemented yet.
func (*ScaleConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Scale not implemented")
}

// Type returns "Softmax".
func (*SoftmaxConfig) Type() string { return "Softmax" }

// Build is not implemented yet.
func (*SoftmaxConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Softmax not implemented")
}

// Type returns "SoftmaxWithLoss".
func (*SoftmaxWithLossConfig) Type() string { return "SoftmaxWithLoss" }

// Build is not implemented yet.
func (*SoftmaxWithLossConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: SoftmaxWithLoss not implemented")
}

// Type returns "Accuracy".
func (*AccuracyConfig) Type() string { return "Accuracy" }

// Build is not implemented yet.
func (*AccuracyConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Accuracy not implemented")
}
