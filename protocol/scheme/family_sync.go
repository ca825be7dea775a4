package scheme

import "fmt"

// The synchronous data-parallel schemes: every worker applies the same
// update to the same weights each iteration.
var syncFamily = []Info{
	{
		Name: "seq", Paper: "Caffe's Solver::Solve", Summary: "one worker, no communication",
		GradAllreduce: true,
		Exact:         true,
		MinWorkers:    1, MaxWorkers: 1,
		check: func(c Config) error {
			if c.Workers != 1 {
				return fmt.Errorf("scheme: seq runs 1 worker, got %d (use sync-tree, sync-ring, sync-ps or overlap for more)", c.Workers)
			}
			return nil
		},
		newRanks: allreduceRanks(AlgoAuto, false),
	},
	{
		Name: "sync-ps", Paper: "SpeeDO 3.1, FireCaffe 6.1", Summary: "workers push gradients to a parameter server, which updates and sends the weights back",
		Resizable: true,
		Exact:     true,
		Servers:   func(Config) int { return 1 }, ServerUpdates: true,
		newRanks: func(c Config, n int) []Rank {
			ranks := workers(c, n, func(c Config, _ int) Rank { return newPSWorker(c) })
			ranks[c.Workers] = newPSServer(c)
			return ranks
		},
	},
	{
		Name: "sync-tree", Paper: "FireCaffe 6.2 (reduction trees)", Summary: "allreduce of the gradients by binomial trees",
		GradAllreduce: true,
		Resizable:     true,
		Exact:         true,
		newRanks:      allreduceRanks(AlgoTree, false),
	},
	{
		Name: "sync-ring", Paper: "ring allreduce (reduce-scatter + allgather)", Summary: "allreduce of the gradients around a ring",
		GradAllreduce: true,
		Resizable:     true,
		Exact:         true,
		newRanks:      allreduceRanks(AlgoRing, false),
	},
	{
		Name: "overlap", Paper: "TRL/Caffe Alg. 5–7", Summary: "gradients accumulated layer by layer while backward runs",
		GradAllreduce: true,
		Resizable:     true,
		Exact:         true,
		Accumulator:   true,
		newRanks:      allreduceRanks(AlgoTree, true),
	},
	{
		Name: "local-sgd", Paper: "Stich 2019; PyTorch's PeriodicModelAverager", Summary: "local steps, weights averaged every H = --interval iterations",
		Resizable: true, Periodic: true,
		AveragesGrads: true,
		newRanks: func(c Config, n int) []Rank {
			if c.AverageGrads {
				// H = 1 with a linear solver: the gradients' mean, as
				// sync-ring computes it (Config.AverageGrads).
				return allreduceRanks(AlgoRing, false)(c, n)
			}
			return workers(c, n, func(c Config, _ int) Rank { return newLocalSGD(c) })
		},
	},
	{
		Name: "diloco", Paper: "Douillard et al. 2023 (DiLoCo, Alg. 1)", Summary: "H = --interval local steps, then the workers' mean pseudo-gradient applied by an outer Nesterov SGD (lr --alpha, default 0.7; momentum 0.9)",
		Resizable: true, Periodic: true,
		Outer:    true,
		newRanks: func(c Config, n int) []Rank { return workers(c, n, func(c Config, _ int) Rank { return newDiLoCo(c) }) },
	},
	{
		Name: "streaming-diloco", Paper: "Douillard et al. 2025 (Streaming DiLoCo)", Summary: "diloco synchronised fragment by fragment (--fragments P, staggered by H/P), the outer step landing --overlap steps later mixed by --mix, pseudo-gradients in --outer-bits",
		Periodic: true,
		Outer:    true, Streaming: true,
		check:    checkStreaming,
		newRanks: func(c Config, n int) []Rank { return workers(c, n, newStreaming) },
	},
}

// allreduceRanks builds the workers of a scheme that sums its gradients
// by algo, after backward or, with overlap, while it runs.
func allreduceRanks(algo Algo, overlap bool) func(Config, int) []Rank {
	return func(c Config, n int) []Rank {
		return workers(c, n, func(c Config, _ int) Rank { return newAllreduce(c, algo, overlap) })
	}
}
