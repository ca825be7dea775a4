//go:build race

package model

// raceEnabled says the race detector is on: it allocates, so allocation
// counts are skipped.
const raceEnabled = true
