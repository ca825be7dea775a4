package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// Network is the α-β model of SC17 Table 2: a message of m bytes takes
// Alpha + Beta·m seconds on a link. Alpha is the latency in seconds, Beta
// the inverse bandwidth in seconds per byte. The zero Network is an
// infinitely fast one.
type Network struct {
	Name        string
	Alpha, Beta float64
}

// Presets are the interconnects of SC17 Table 2.
var Presets = map[string]Network{
	"fdr-ib": {Name: "fdr-ib", Alpha: 0.7e-6, Beta: 0.2e-9},
	"qdr-ib": {Name: "qdr-ib", Alpha: 1.2e-6, Beta: 0.3e-9},
	"10gbe":  {Name: "10gbe", Alpha: 7.2e-6, Beta: 0.9e-9},
}

// Cost is the time in seconds one message of bytes takes on an idle link.
func (n Network) Cost(bytes int64) float64 { return n.Alpha + n.Beta*float64(bytes) }

func (n Network) String() string {
	return fmt.Sprintf("%s (alpha=%.4gus, beta=%.4gns/B)", n.Name, n.Alpha*1e6, n.Beta*1e9)
}

// ParseNetwork reads a preset name (fdr-ib, qdr-ib, 10gbe) or a model
// "alpha=7.2us,beta=0.9ns": alpha a duration (ns, us, µs, ms, s; a bare
// number is seconds), beta a duration per byte (an optional "/B" suffix is
// accepted). Both keys are required. Errors name the bad part.
func ParseNetwork(s string) (Network, error) {
	s = strings.TrimSpace(s)
	if n, ok := Presets[strings.ToLower(s)]; ok {
		return n, nil
	}
	if !strings.Contains(s, "=") {
		return Network{}, fmt.Errorf("sim: unknown network %q; choose fdr-ib, qdr-ib, 10gbe or alpha=…,beta=…", s)
	}
	n := Network{Name: s}
	var haveA, haveB bool
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return Network{}, fmt.Errorf("sim: network %q: part %q is not key=value", s, part)
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		switch k {
		case "alpha":
			if haveA {
				return Network{}, fmt.Errorf("sim: network %q: alpha given twice", s)
			}
			x, err := parseSeconds(v)
			if err != nil {
				return Network{}, fmt.Errorf("sim: network %q: alpha: %v", s, err)
			}
			n.Alpha, haveA = x, true
		case "beta":
			if haveB {
				return Network{}, fmt.Errorf("sim: network %q: beta given twice", s)
			}
			low := strings.ToLower(v)
			for _, suf := range []string{"/byte", "/b"} {
				if strings.HasSuffix(low, suf) {
					v = v[:len(v)-len(suf)]
					break
				}
			}
			x, err := parseSeconds(v)
			if err != nil {
				return Network{}, fmt.Errorf("sim: network %q: beta: %v", s, err)
			}
			n.Beta, haveB = x, true
		default:
			return Network{}, fmt.Errorf("sim: network %q: unknown key %q (want alpha and beta)", s, k)
		}
	}
	switch {
	case !haveA:
		return Network{}, fmt.Errorf("sim: network %q: alpha missing", s)
	case !haveB:
		return Network{}, fmt.Errorf("sim: network %q: beta missing", s)
	}
	return n, nil
}

// parseSeconds reads a non-negative time such as "7.2us", "0.9ns", "1e-6"
// (seconds) into seconds. Unlike time.ParseDuration it keeps fractions of
// a nanosecond.
func parseSeconds(v string) (float64, error) {
	units := []struct {
		suf   string
		scale float64
	}{{"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"μs", 1e-6}, {"ms", 1e-3}, {"s", 1}}
	num, scale := v, 1.0
	for _, u := range units {
		if strings.HasSuffix(v, u.suf) {
			num, scale = strings.TrimSpace(v[:len(v)-len(u.suf)]), u.scale
			break
		}
	}
	x, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a duration (e.g. 7.2us, 0.9ns)", v)
	}
	if x < 0 || x != x || x > 1e300 {
		return 0, fmt.Errorf("%q is negative or not finite", v)
	}
	return x * scale, nil
}
