//go:build !race

package train

// lockFreeSchemes update shared weights with no lock (the races are the
// algorithm, see hogwild_test.go), so they run only without the race
// detector.
var lockFreeSchemes = []string{"hogwild-easgd", "hogwild"}
