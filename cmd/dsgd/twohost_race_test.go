//go:build race

package main

// twoHostRace says the race detector is on: TestTwoHosts's four LeNet
// ranks then take minutes, not seconds, on a 2-core machine; the plain
// `go test ./...` pass of `make test` runs it.
const twoHostRace = true
