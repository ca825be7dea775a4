//go:build !linux

package tensor

// machineState has no portable source outside Linux: auto parks.
func machineState() (realtime bool, load float64, ok bool) { return false, 0, false }
