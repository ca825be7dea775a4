package cli

import (
	"fmt"
	"io"
	"strings"
)

// Values is a flag whose values form a fixed set, with that set.
type Values struct {
	Flag   string
	Values []string
}

// Completion is what a bash completion script offers.
type Completion struct {
	Program  string              // the program's name ("dsgd"): the completed word and the function's _Program
	Commands []Command           // the commands, in the order offered
	Flags    map[string][]string // each command's flags, without dashes
	Extra    []string            // first words that are not in Commands (help, version)
	Values   []Values            // after these flags, their values
	Files    []string            // after these flags, file names
}

// WriteBash writes c as a bash completion script (to source, or to save
// in /etc/bash_completion.d): the first word completes to a command, a
// command's later words to its flags, and the word after a flag in Values
// or Files to its values or to file names. Flags match spelt -name and
// --name alike, as Go's flag package reads both.
func (c Completion) WriteBash(w io.Writer) error {
	var names []string
	for _, cmd := range c.Commands {
		names = append(names, cmd.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %[1]s: source <(%[1]s completion bash)\n", c.Program)
	fmt.Fprintf(&b, "_%s() {\n", c.Program)
	fmt.Fprintln(&b, `	local cur prev cmd`)
	fmt.Fprintln(&b, `	cur=${COMP_WORDS[COMP_CWORD]}`)
	fmt.Fprintln(&b, `	prev=${COMP_WORDS[COMP_CWORD-1]}`)
	fmt.Fprintln(&b, `	if [ "$COMP_CWORD" -eq 1 ]; then`)
	fmt.Fprintf(&b, "\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n", strings.Join(append(names, c.Extra...), " "))
	fmt.Fprintln(&b, `		return`)
	fmt.Fprintln(&b, `	fi`)
	fmt.Fprintln(&b, `	cmd=${COMP_WORDS[1]}`)
	fmt.Fprintln(&b, `	case "$prev" in`)
	pattern := func(names ...string) string {
		var p []string
		for _, n := range names {
			p = append(p, "-"+n, "--"+n)
		}
		return strings.Join(p, "|")
	}
	for _, v := range c.Values {
		fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", pattern(v.Flag), strings.Join(v.Values, " "))
	}
	fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", pattern(c.Files...))
	fmt.Fprintln(&b, `	esac`)
	fmt.Fprintln(&b, `	case "$cmd" in`)
	for _, cmd := range c.Commands {
		fl := c.Flags[cmd.Name]
		if len(fl) == 0 {
			continue
		}
		words := make([]string, len(fl))
		for i, f := range fl {
			words[i] = "--" + f
		}
		fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", cmd.Name, strings.Join(words, " "))
	}
	fmt.Fprintln(&b, `	esac`)
	fmt.Fprintln(&b, "}")
	fmt.Fprintf(&b, "complete -o default -F _%[1]s %[1]s\n", c.Program)
	_, err := io.WriteString(w, b.String())
	return err
}
