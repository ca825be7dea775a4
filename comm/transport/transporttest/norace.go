//go:build !race

package transporttest

const raceEnabled = false
