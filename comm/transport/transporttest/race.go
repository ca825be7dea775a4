//go:build race

package transporttest

// raceEnabled shrinks the large-message test under the race detector,
// which makes every touched float of it an order of magnitude slower.
const raceEnabled = true
