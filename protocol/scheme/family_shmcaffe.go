package scheme

import "fmt"

// ShmCaffe's schemes (ShmCaffe III): the workers share global weights in
// a shared buffer (a center).
var shmcaffeFamily = []Info{
	{
		Name: "seasgd", Paper: "ShmCaffe III.G (SEASGD), Eq. 5–7", Summary: "elastic averaging through a shared buffer, the push overlapped with compute",
		Center: EveryWorker, Elastic: true, Aligned: true, SharedBuffers: true,
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank { return newCenterWorker(c, r, centerRule{body: seasgdStep}) })
		},
	},
	{
		Name: "hybrid", Paper: "ShmCaffe III.D", Summary: "synchronous SGD in --groups groups, SEASGD between their roots",
		Center: GroupRoots, Elastic: true, SharedBuffers: true, AlphaPerGroup: true, Aligned: true,
		check: func(c Config) error {
			if c.Groups < 1 || c.Workers%c.Groups != 0 {
				return fmt.Errorf("scheme: hybrid splits %d workers into %d groups; the workers must be a multiple of the groups", c.Workers, c.Groups)
			}
			return nil
		},
		newRanks: func(c Config, n int) []Rank {
			return workers(c, n, func(c Config, r int) Rank { return newCenterWorker(c, r, centerRule{body: hybridStep, groups: true}) })
		},
	},
}
