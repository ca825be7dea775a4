package solver

// Config is Caffe's SolverParameter, the part that defines the update. The
// caffedef package fills it from a solver prototxt, applying Caffe's defaults;
// Validate rejects what remains out of range.
type Config struct {
	// Type is "SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta" or "Adam".
	Type string
	// BaseLR is base_lr.
	BaseLR float64
	// Momentum is momentum (Adam's beta1, AdaDelta's decay).
	Momentum float64
	// Momentum2 is Adam's beta2 (Caffe default 0.999).
	Momentum2 float64
	// Delta is the epsilon of AdaGrad, RMSProp, AdaDelta and Adam (Caffe
	// default 1e-8).
	Delta float64
	// RMSDecay is RMSProp's rms_decay (Caffe default 0.99).
	RMSDecay float64
	// WeightDecay is weight_decay.
	WeightDecay float64
	// Regularization is "L2" (default) or "L1".
	Regularization string
	// ClipGradients is clip_gradients: scale the whole gradient so its L2
	// norm is at most this; <= 0 disables it.
	ClipGradients float64

	// LRPolicy is "fixed", "step", "multistep", "exp", "inv", "poly" or
	// "sigmoid", with Gamma, Power, StepSize, StepValues as Caffe defines
	// them; MaxIter is needed by "poly".
	LRPolicy   string
	Gamma      float64
	Power      float64
	StepSize   int
	StepValues []int
	MaxIter    int

	// WarmupIters ramps the learning rate linearly from 0 to the policy's
	// value over the first WarmupIters iterations: the gradual warm-up of
	// large-batch training (Goyal et al. 2017); none of the five papers
	// has it, and Caffe does not. 0 disables it.
	WarmupIters int
}
