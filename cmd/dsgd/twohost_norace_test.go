//go:build !race

package main

// twoHostRace says the race detector is on (see twohost_race_test.go).
const twoHostRace = false
