package main

import (
	"os"
	"strconv"
	"strings"
)

// machineMemory is MemTotal in /proc/meminfo, in bytes; 0 where that file
// cannot be read (no limit then).
func machineMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kib <= 0 {
				return 0
			}
			return kib * 1024
		}
	}
	return 0
}
