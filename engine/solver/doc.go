// Package solver owns the parameter update: Caffe's update rules (SGD with
// momentum, Nesterov, AdaGrad, RMSProp, Adam), its learning-rate policies
// (fixed, step, multistep, exp, inv, poly, sigmoid) plus a linear warm-up for
// large-batch training, weight decay (L2 or L1) with per-blob lr_mult and
// decay_mult, gradient clipping, and the rule's history with its snapshot
// format. It sees parameters only as one flat []float32 cut into Segments
// (one per parameter blob) and knows nothing of layers, workers or schemes.
//
// The canonical use, one update per iteration after the gradient is final:
//
//	cfg := solver.Config{Type: "SGD", BaseLR: 0.01, Momentum: 0.9,
//		WeightDecay: 5e-4, LRPolicy: "inv", Gamma: 1e-4, Power: 0.75}
//	s, err := solver.New(cfg, len(params), segs) // segs from the model's blobs
//	if err != nil { ... }                        // a configuration error
//	for iter := 0; iter < maxIter; iter++ {
//		... compute grads ...
//		s.Step(iter, params, grads)
//	}
//
// Schemes that update layer by layer as gradients arrive (TRL's overlap)
// call CheckSegmentwise once, then StepSegment(iter, seg, params, grads)
// once per segment and iteration; that gives bit for bit the result of Step.
// Snapshots save WriteState beside the weights and the iteration, and
// ReadState restores it.
//
// The arithmetic follows Caffe's SGDSolver::ApplyUpdate operation by
// operation in float32, with no fused multiply-add, so results do not depend
// on the architecture. A Solver is not safe for concurrent use (see Solver).
// Programmer errors (wrong slice lengths, a segment index out of range)
// panic with a "solver: ..." message; configuration and state-file errors
// are returned.
package solver
