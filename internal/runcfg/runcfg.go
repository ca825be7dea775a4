package runcfg

import (
	"fmt"
	"strings"
)

// Fields are the settings, in a fixed order; a name is as the user knows
// the setting (a flag, or a solver field), and holds no '=' or newline.
type Fields [][2]string

// String is the fields as name=value lines.
func (f Fields) String() string {
	var b strings.Builder
	for _, kv := range f {
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(kv[1])
		b.WriteByte('\n')
	}
	return b.String()
}

// Parse reads what String wrote. A peer sends it, so a line that is not
// name=value, an empty name and a name given twice (which Compare could
// read either way) are refused, naming the line.
func Parse(s string) (Fields, error) {
	var out Fields
	seen := map[string]int{}
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if line == "" && s == "" {
			break
		}
		name, v, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("run settings: line %d %q is not name=value", i+1, line)
		case name == "":
			return nil, fmt.Errorf("run settings: line %d %q has no name", i+1, line)
		case seen[name] != 0:
			return nil, fmt.Errorf("run settings: line %d sets %q again (first on line %d)", i+1, name, seen[name])
		}
		seen[name] = i + 1
		out = append(out, [2]string{name, v})
	}
	return out, nil
}

// Diff is a setting whose values differ.
type Diff struct {
	Name, Mine, Theirs string
}

// Compare returns the first setting of mine whose value in theirs differs
// (missing counts as differing, with Theirs "(not set)"); ok is false when
// they agree.
func Compare(mine, theirs Fields) (d Diff, ok bool) {
	th := make(map[string]string, len(theirs))
	for _, kv := range theirs {
		th[kv[0]] = kv[1]
	}
	for _, kv := range mine {
		v, has := th[kv[0]]
		if !has {
			v = "(not set)"
		}
		if v != kv[1] {
			return Diff{Name: kv[0], Mine: kv[1], Theirs: v}, true
		}
	}
	return Diff{}, false
}
