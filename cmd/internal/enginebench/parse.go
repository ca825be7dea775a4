package enginebench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dsgd/engine/cpuinfo"
)

// ParseNets parses Config.Nets: comma-separated names of Nets, each at
// most once, in the order given (the order they run in).
func ParseNets(s string) ([]Net, error) {
	var out []Net
	for _, f := range strings.Split(s, ",") {
		name := strings.TrimSpace(f)
		i := slices.IndexFunc(Nets, func(n Net) bool { return n.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no net %q; the nets are %s", name, strings.Join(NetNames(), ", "))
		}
		if slices.ContainsFunc(out, func(n Net) bool { return n.Name == name }) {
			return nil, fmt.Errorf("%s given twice", name)
		}
		out = append(out, Nets[i])
	}
	return out, nil
}

// ParseThreads parses Config.Threads: comma-separated positive counts.
func ParseThreads(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		t, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || t <= 0 {
			return nil, fmt.Errorf("bad thread count %q", f)
		}
		out = append(out, t)
	}
	return out, nil
}

// ParseISAs parses Config.ISAs: comma-separated oneDNN ISA names, each at
// most once; "" is no list.
func ParseISAs(s string) ([]cpuinfo.ISA, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []cpuinfo.ISA
	for _, f := range strings.Split(s, ",") {
		l, err := cpuinfo.ParseISA(f)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, l) {
			return nil, fmt.Errorf("%s given twice", l)
		}
		out = append(out, l)
	}
	return out, nil
}

// ParsePerNet parses an iteration count (Net.Iters, Net.Warmup) given for
// every net ("5", key "") or per net ("caffenet=2,googlenet=2"); every
// value must be at least min. "" gives an empty map. SetCounts applies
// the result.
func ParsePerNet(s string, min int) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	atoi := func(v string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			return 0, fmt.Errorf("%q is not an integer of at least %d", v, min)
		}
		return n, nil
	}
	if !strings.Contains(s, "=") {
		n, err := atoi(s)
		if err != nil {
			return nil, err
		}
		out[""] = n
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not NET=N", kv)
		}
		if !slices.Contains(NetNames(), k) {
			return nil, fmt.Errorf("no net %q; the nets are %s", k, strings.Join(NetNames(), ", "))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s given twice", k)
		}
		n, err := atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		out[k] = n
	}
	return out, nil
}

// SetCounts sets each of nets' Iters and Warmup from ParsePerNet's maps:
// the net's own value, else the one for every net (key ""), else the
// net's default.
func SetCounts(nets []Net, iters, warmup map[string]int) {
	pick := func(m map[string]int, name string, v *int) {
		if n, ok := m[name]; ok {
			*v = n
		} else if n, ok := m[""]; ok {
			*v = n
		}
	}
	for i := range nets {
		pick(iters, nets[i].Name, &nets[i].Iters)
		pick(warmup, nets[i].Name, &nets[i].Warmup)
	}
}

// Defaults is each net's default count f gives, as ParsePerNet reads
// them: "lenet=200,cifar10_quick=10,...".
func Defaults(f func(Net) int) string {
	var s []string
	for _, n := range Nets {
		s = append(s, fmt.Sprintf("%s=%d", n.Name, f(n)))
	}
	return strings.Join(s, ",")
}
