//go:build race

package sim

// raceEnabled says the race detector is on: it makes every simulated
// message an order of magnitude slower, so the large tests shrink.
const raceEnabled = true
