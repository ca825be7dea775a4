package scheme

import "fmt"

// SpeeDO's asynchronous schemes (SpeeDO 3.2–3.4): the workers talk to a
// parameter server (a center).
var speedoFamily = []Info{
	{
		Name: "async", Paper: "SpeeDO 3.2 (Downpour)", Summary: "local steps, the change merged into the center every S = --interval iterations",
		Center: EveryWorker, Aligned: true, SharedSteps: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank {
				return newCenterWorker(c, r, centerRule{body: downpourStep(true), keepRead: true})
			})
		},
	},
	{
		Name: "ssp", Paper: "SpeeDO 3.3, Petuum's SSP", Summary: "async with the fastest worker at most --staleness iterations ahead of the slowest",
		Center: EveryWorker, Aligned: true, SharedSteps: true, Staleness: true,
		check: func(c Config) error {
			if c.Staleness < 0 {
				return fmt.Errorf("scheme: ssp needs a staleness bound >= 0, got %d", c.Staleness)
			}
			return nil
		},
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank {
				return newCenterWorker(c, r, centerRule{body: downpourStep(false), keepRead: true, ssp: true})
			})
		},
	},
	{
		Name: "weedout", Paper: "SpeeDO 3.4", Summary: "synchronous rounds closed at a deadline; stragglers dropped and restarted",
		Center: EveryWorker, CenterSolver: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, _ int) Rank { return newWeedout(c) })
		},
	},
}
