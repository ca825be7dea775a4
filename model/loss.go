package model

// HasLoss reports whether some top of the net carries a loss weight: a
// loss layer, or any layer given a non-zero loss_weight. A TRAIN net
// without one has nothing to minimise.
func (n *Net) HasLoss() bool {
	for _, nd := range n.nodes {
		for _, w := range nd.lossWeight {
			if w != 0 {
				return true
			}
		}
	}
	return false
}
