package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"dsgd/internal/bytesize"
)

// machineMemory is the memory dsgd may plan for, in bytes: DSGD_MEMORY
// when set (a size such as 8GiB, for a machine shared with other jobs),
// else MemTotal in /proc/meminfo; 0 where neither is known (no limit
// then).
func machineMemory(stderr io.Writer) int64 {
	if s := os.Getenv("DSGD_MEMORY"); s != "" {
		v, err := bytesize.Parse(s, 1<<20)
		if err == nil && v > 0 {
			return v
		}
		fmt.Fprintf(stderr, "dsgd: DSGD_MEMORY=%q is not a size such as 8GiB; using the machine's\n", s)
	}
	return memTotal()
}

// memTotal is MemTotal in /proc/meminfo, in bytes; 0 where it cannot be
// read.
func memTotal() int64 {
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
