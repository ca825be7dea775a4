package layers

// The bottoms each layer cannot differentiate (GradientBlocker), as
// Caffe's AllowForceBackward and its Backward checks say: a loss's labels
// (EuclideanLoss compares two predictions and takes both), ContrastiveLoss's
// similarity flags, InfogainLoss's labels and matrix, and every input of
// Accuracy and ArgMax, which have no backward pass.

// AllowBackward implements GradientBlocker: the labels take no gradient.
func (*softmaxLossLayer) AllowBackward(i int) bool { return i != 1 }

// AllowBackward implements GradientBlocker: the labels take no gradient.
func (*multinomialLossLayer) AllowBackward(i int) bool { return i != 1 }

// AllowBackward implements GradientBlocker: the labels take no gradient.
func (*sigmoidCELossLayer) AllowBackward(i int) bool { return i != 1 }

// AllowBackward implements GradientBlocker: the labels take no gradient.
func (*hingeLossLayer) AllowBackward(i int) bool { return i != 1 }

// AllowBackward implements GradientBlocker: only the predictions take a
// gradient, not the labels or the infogain matrix.
func (*infogainLossLayer) AllowBackward(i int) bool { return i == 0 }

// AllowBackward implements GradientBlocker: the similarity flags take no
// gradient.
func (*contrastiveLossLayer) AllowBackward(i int) bool { return i != 2 }

// AllowBackward implements GradientBlocker: Accuracy has no backward pass.
func (*accuracyLayer) AllowBackward(int) bool { return false }

// AllowBackward implements GradientBlocker: ArgMax has no backward pass.
func (*argMaxLayer) AllowBackward(int) bool { return false }

// AllowBackward implements GradientBlocker: the continuation flags (bottom
// 1) take no gradient.
func (*lstmLayer) AllowBackward(i int) bool { return i != 1 }

// AllowBackward implements GradientBlocker: the continuation flags (bottom
// 1) take no gradient.
func (*rnnLayer) AllowBackward(i int) bool { return i != 1 }

// AllowBackward implements GradientBlocker: the continuation flags (bottom
// 2) take no gradient.
func (*lstmUnitLayer) AllowBackward(i int) bool { return i != 2 }
