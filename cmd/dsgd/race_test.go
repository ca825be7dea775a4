//go:build race

package main

// raceEnabled says the race detector is on. TestTwoHosts's four LeNet
// ranks then take minutes, not seconds, on a 2-core machine, and the
// lock-free schemes (hogwild, hogwild-easgd: the races are the
// algorithm) would be reported; the plain `go test ./...` pass of `make
// test` runs them.
const raceEnabled = true
