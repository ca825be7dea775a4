package scheme

import "fmt"

// The synchronous data-parallel schemes: every worker applies the same
// update to the same weights each iteration.
var syncFamily = []Info{
	{
		Name: "seq", Paper: "Caffe's Solver::Solve", Summary: "one worker, no communication",
		Exact:      true,
		MinWorkers: 1, MaxWorkers: 1,
		check: func(c Config) error {
			if c.Workers != 1 {
				return fmt.Errorf("scheme: seq runs 1 worker, got %d (use sync-tree, sync-ring, sync-ps or overlap for more)", c.Workers)
			}
			return nil
		},
		newRanks: func(c Config, n int) []Rank { return workers(c, n, newAllreduceWorker) },
	},
	{
		Name: "sync-ps", Paper: "SpeeDO 3.1, FireCaffe 6.1", Summary: "workers push gradients to a parameter server, which updates and sends the weights back",
		Exact:   true,
		Servers: func(Config) int { return 1 }, ServerUpdates: true,
		newRanks: func(c Config, n int) []Rank {
			ranks := workers(c, n, func(c Config, _ int) Rank { return &psWorker{cfg: c, server: c.Workers, iter: c.StartIter} })
			ranks[c.Workers] = &psServer{cfg: c, iter: c.StartIter}
			return ranks
		},
	},
	{
		Name: "sync-tree", Paper: "FireCaffe 6.2 (reduction trees)", Summary: "allreduce of the gradients by binomial trees",
		Exact:    true,
		newRanks: func(c Config, n int) []Rank { return workers(c, n, newAllreduceWorker) },
	},
	{
		Name: "sync-ring", Paper: "ring allreduce (reduce-scatter + allgather)", Summary: "allreduce of the gradients around a ring",
		Exact:    true,
		newRanks: func(c Config, n int) []Rank { return workers(c, n, newAllreduceWorker) },
	},
	{
		Name: "overlap", Paper: "TRL/Caffe Alg. 5–7", Summary: "gradients accumulated layer by layer while backward runs",
		Exact:       true,
		Accumulator: true,
		newRanks:    func(c Config, n int) []Rank { return workers(c, n, newAllreduceWorker) },
	},
	{
		Name: "local-sgd", Paper: "Stich 2019; PyTorch's PeriodicModelAverager", Summary: "local steps, weights averaged every H = --interval iterations",
		newRanks: func(c Config, n int) []Rank {
			if c.AverageGrads {
				// H = 1 with a linear solver: the gradients' mean, as
				// sync-ring computes it (Config.AverageGrads).
				return workers(c, n, func(c Config, _ int) Rank {
					return &allreduceWorker{cfg: c, iter: c.StartIter, algo: AlgoRing}
				})
			}
			return workers(c, n, func(c Config, _ int) Rank { return newLocalSGD(c) })
		},
	},
	{
		Name: "diloco", Paper: "Douillard et al. 2023 (DiLoCo, Alg. 1)", Summary: "H = --interval local steps, then the workers' mean pseudo-gradient applied by an outer Nesterov SGD (lr --alpha, default 0.7; momentum 0.9)",
		Outer:    true,
		newRanks: func(c Config, n int) []Rank { return workers(c, n, func(c Config, _ int) Rank { return newDiLoCo(c) }) },
	},
	{
		Name: "streaming-diloco", Paper: "Douillard et al. 2025 (Streaming DiLoCo)", Summary: "diloco synchronised fragment by fragment (--fragments P, staggered by H/P), the outer step landing --overlap steps later mixed by --mix, pseudo-gradients in --outer-bits",
		Outer:    true,
		check:    checkStreaming,
		newRanks: func(c Config, n int) []Rank { return workers(c, n, newStreaming) },
	},
}

// newAllreduceWorker builds a worker of seq, sync-tree, sync-ring or
// overlap.
func newAllreduceWorker(c Config, _ int) Rank {
	w := &allreduceWorker{cfg: c, iter: c.StartIter, overlap: c.Name == "overlap"}
	switch c.Name {
	case "sync-ring":
		w.algo = AlgoRing
	case "sync-tree", "overlap":
		w.algo = AlgoTree
	}
	return w
}
