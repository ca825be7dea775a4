package scheme

import "fmt"

// The elastic averaging schemes of SC17 ("EASGD on GPU and KNL
// clusters"), and hogwild.
var easgdFamily = []Info{
	{
		Name: "easgd-rr", Paper: "SC17 Alg. 1 (Original EASGD)", Summary: "one worker at a time, in rank order, exchanges with the center",
		Center: EveryWorker, Policy: RoundRobin, Elastic: true, PlainSGD: true, Aligned: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank {
				return newCenterWorker(c, r, centerRule{body: easgdRRStep, pullOnRestartOnly: true})
			})
		},
	},
	{
		Name: "easgd", Paper: "SC17 5 (Async EASGD), Eq. 1–2", Summary: "workers exchange with the center first come, first served",
		Center: EveryWorker, Elastic: true, PlainSGD: true, Aligned: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank { return newCenterWorker(c, r, centerRule{body: elasticExchangeStep}) })
		},
	},
	{
		Name: "measgd", Paper: "SC17 5 (Async MEASGD), Eq. 5–6", Summary: "easgd with the solver's momentum",
		Center: EveryWorker, Elastic: true, Aligned: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank { return newCenterWorker(c, r, centerRule{body: elasticExchangeStep}) })
		},
	},
	{
		Name: "hogwild-easgd", Paper: "SC17 5 (Hogwild EASGD)", Summary: "easgd with the center updated with no lock",
		Center: EveryWorker, Policy: Hogwild, Elastic: true, PlainSGD: true, Aligned: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank { return newCenterWorker(c, r, centerRule{body: elasticExchangeStep}) })
		},
	},
	{
		Name: "hogwild", Paper: "Hogwild! (Niu et al. 2011), SC17 5", Summary: "workers update one set of weights in memory with no lock",
		SharedSteps: true, SharedWeights: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank { return newCenterWorker(c, r, centerRule{body: localStep, noCenter: true}) })
		},
	},
	{
		Name: "sync-easgd", Paper: "SC17 5, Alg. 2–3 (Sync EASGD)", Summary: "every iteration, a tree reduction of the workers' differences from the center",
		Elastic: true, PlainSGD: true, OwnCenter: true, Role: "master",
		Servers: func(c Config) int {
			if c.Variant == 1 {
				return 1
			}
			return 0
		},
		check: func(c Config) error {
			if c.Variant < 1 || c.Variant > 3 {
				return fmt.Errorf("scheme: sync-easgd variant %d; choose 1 (separate master), 2 (center on worker 0) or 3 (2, overlapped)", c.Variant)
			}
			return nil
		},
		newRanks: func(c Config, n int) []Rank {
			ranks := workers(c, n, func(c Config, r int) Rank { return newSyncEASGD(c, r) })
			if c.Variant == 1 {
				ranks[c.Workers] = newSyncEASGD(c, c.Workers)
			}
			return ranks
		},
	},
}
