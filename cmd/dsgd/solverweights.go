package main

import "strings"

// weightsFrom returns the .caffemodel files to start from: the --weights
// flag's list, or else the solver's weights fields (each may be a
// comma-separated list), as caffe train lets its flag replace them.
func weightsFrom(flag string, solver []string) []string {
	if flag != "" {
		return splitList(flag)
	}
	return splitList(strings.Join(solver, ","))
}
