package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// Group is a heading of a command's help and the flags listed under it.
type Group struct {
	Title string   // the heading, printed followed by a colon
	Flags []string // the flags' names, without dashes
}

// GroupedMin is the number of flags from which PrintFlags groups them.
const GroupedMin = 20

// PrintFlags writes fs's flags as flag.PrintDefaults does (spelt --name):
// grouped under groups' headings, in their order, when fs has GroupedMin
// flags or more; a flag in no group is listed under "Other", last.
func PrintFlags(w io.Writer, fs *flag.FlagSet, groups []Group) {
	var all []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
	if len(all) < GroupedMin {
		for _, f := range all {
			printFlag(w, f)
		}
		return
	}
	group := map[string]int{}
	for i, g := range groups {
		for _, name := range g.Flags {
			group[name] = i
		}
	}
	byGroup := make([][]*flag.Flag, len(groups)+1)
	for _, f := range all {
		i, ok := group[f.Name]
		if !ok {
			i = len(groups)
		}
		byGroup[i] = append(byGroup[i], f)
	}
	for i, fl := range byGroup {
		if len(fl) == 0 {
			continue
		}
		title := "Other"
		if i < len(groups) {
			title = groups[i].Title
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range fl {
			printFlag(w, f)
		}
	}
}

// printFlag writes one flag in flag.PrintDefaults' form, but spelt
// --name as the README and the messages write it (the flag package reads
// -name and --name alike, so Caffe's single dash works too).
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if name != "" {
		line += " " + name
	}
	if len(line) <= 5 {
		line += "\t"
	} else {
		line += "\n    \t"
	}
	line += strings.ReplaceAll(usage, "\n", "\n    \t")
	if d := f.DefValue; d != "" && d != "0" && d != "false" && !strings.Contains(usage, "default") { // a usage that names its default says it better
		if quoted(f) {
			line += fmt.Sprintf(" (default %q)", d)
		} else {
			line += fmt.Sprintf(" (default %v)", d)
		}
	}
	fmt.Fprintln(w, line)
}

// quoted reports whether f is a string flag, whose default
// flag.PrintDefaults quotes.
func quoted(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	_, s := g.Get().(string)
	return s
}

// DidYouMean is ", did you mean X?" for the option nearest word when it is
// close (it starts with word, or is at most two edits away, or a third of
// word's letters for a long one; one for a word of three letters), else "".
func DidYouMean(word string, options []string) string {
	best, bestD := "", -1
	for _, o := range options {
		d := editDistance(word, o)
		if strings.HasPrefix(o, word) && len(word) >= 3 {
			d = min(d, 1)
		}
		if bestD < 0 || d < bestD {
			best, bestD = o, d
		}
	}
	limit := max(2, len(word)/3)
	if len(word) <= 3 {
		limit = 1
	}
	if bestD < 0 || bestD > limit {
		return ""
	}
	return fmt.Sprintf(", did you mean %q?", best)
}

// editDistance is the edit distance between a and b, a swap of two
// neighbouring letters counting as one edit (optimal string alignment).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
