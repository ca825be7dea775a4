package study

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseWorkers reads a list of worker counts (dsgd simulate's --workers):
// counts separated by commas, increasing, where "..." (or "…") continues
// the two counts before it, doubling when the second is twice the first
// and else by their difference, up to the count after it: "1,2,...,16" is 1,2,4,8,16 and "4,6,...,12" 4,6,8,10,12.
func ParseWorkers(s string) ([]int, error) {
	parts := strings.Split(s, ",")
	var out []int
	for i := 0; i < len(parts); i++ {
		p := strings.TrimSpace(parts[i])
		if p == "..." || p == "…" {
			if len(out) < 2 || i+1 >= len(parts) {
				return nil, fmt.Errorf("%q: \"...\" needs two counts before it and one after", s)
			}
			end, err := parseCount(parts[i+1])
			if err != nil {
				return nil, fmt.Errorf("%q: %v", s, err)
			}
			a, b := out[len(out)-2], out[len(out)-1]
			for {
				next := b + (b - a)
				if b == 2*a {
					next = 2 * b
				}
				if next >= end {
					break
				}
				if len(out) >= maxSweep {
					return nil, fmt.Errorf("%q is more than %d counts", s, maxSweep)
				}
				out = append(out, next)
				a, b = b, next
			}
			continue
		}
		n, err := parseCount(p)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", s, err)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q: %d does not increase on %d", s, n, out[len(out)-1])
		}
		if len(out) >= maxSweep {
			return nil, fmt.Errorf("%q is more than %d counts", s, maxSweep)
		}
		out = append(out, n)
	}
	return out, nil
}

// Limits on ParseWorkers' lists, so that a typo cannot run for hours.
const (
	maxSweep   = 64
	maxWorkers = 1 << 16
)

func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a worker count", s)
	case n < 1 || n > maxWorkers:
		return 0, fmt.Errorf("worker count %d is outside [1,%d]", n, maxWorkers)
	}
	return n, nil
}
