package layers

// Placeholders until each layer lands; delete an entry when its layer file
// defines Type and Build.

import "fmt"

// Type returns "Convolution".
func (*ConvolutionConfig) Type() string { return "Convolution" }

// Build is not implemented yet.
func (*ConvolutionConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Convolution not implemented")
}

// Type returns "Pooling".
func (*PoolingConfig) Type() string { return "Pooling" }

// Build is not implemented yet.
func (*PoolingConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: Pooling not implemented")
}

// Type returns "InnerProduct".
func (*InnerProductConfig) Type() string { return "InnerProduct" }

// Build is not implemented yet.
func (*InnerProductConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: InnerProduct not implemented")
}

// Type returns "LRN".
func (*LRNConfig) Type() string { return "LRN" }

// Build is not implemented yet.
func (*LRNConfig) Build(Context) (Layer, error) {
	return nil, fmt.Errorf("layers: LRN not implemented")
}
