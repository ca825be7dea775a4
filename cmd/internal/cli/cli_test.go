package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestDidYouMean: a near option is suggested, a far one is not; a swap of
// two letters is one edit.
func TestDidYouMean(t *testing.T) {
	opts := []string{"train", "test", "time", "simulate"}
	for _, tc := range []struct{ word, want string }{
		{"trian", `, did you mean "train"?`},
		{"simul", `, did you mean "simulate"?`},
		{"tset", `, did you mean "test"?`},
		{"xyzzy", ""},
	} {
		if got := DidYouMean(tc.word, opts); got != tc.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if d := editDistance("ab", "ba"); d != 1 {
		t.Errorf("editDistance(ab, ba) = %d, want 1", d)
	}
}

// TestPrintFlagsGroups: from GroupedMin flags on, each flag is listed once
// under its group's heading, the others under "Other"; fewer are flat.
func TestPrintFlagsGroups(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	for i := range GroupedMin {
		fs.Int(string(rune('a'+i)), 0, "n")
	}
	var b strings.Builder
	PrintFlags(&b, fs, []Group{{Title: "First", Flags: []string{"b", "a"}}})
	out := b.String()
	if !strings.HasPrefix(out, "\nFirst:\n  --a int\n") || !strings.Contains(out, "\nOther:\n  --c int\n") || strings.Count(out, "--a ") != 1 {
		t.Errorf("grouped help:\n%s", out)
	}
	small := flag.NewFlagSet("y", flag.ContinueOnError)
	small.String("name", "v", "a `NAME`")
	b.Reset()
	PrintFlags(&b, small, nil)
	if want := "  --name NAME\n    \ta NAME (default \"v\")\n"; b.String() != want {
		t.Errorf("flat help %q, want %q", b.String(), want)
	}
}

// TestWriteBash: the script names the program, offers the commands and
// the extra words first, and a command's flags with dashes.
func TestWriteBash(t *testing.T) {
	var b strings.Builder
	c := Completion{Program: "p", Commands: []Command{{Name: "run"}, {Name: "bare"}}, Flags: map[string][]string{"run": {"fast"}},
		Extra: []string{"help"}, Values: []Values{{Flag: "mode", Values: []string{"a", "b"}}}, Files: []string{"in"}}
	if err := c.WriteBash(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"_p() {", `compgen -W "run bare help"`, "\t-mode|--mode) COMPREPLY=($(compgen -W \"a b\"", "\t-in|--in) COMPREPLY=($(compgen -f", "\trun) COMPREPLY=($(compgen -W \"--fast\"", "complete -o default -F _p p\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("script lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\tbare)") {
		t.Errorf("a command without flags has a case:\n%s", out)
	}
}

// TestParseFlags: -h writes the usage to help; a mistyped flag names the
// nearest; an argument after the flags is refused unless positional.
func TestParseFlags(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.Int("scheme", 0, "n")
		return fs
	}
	var help, errs strings.Builder
	if err := ParseFlags("p", newFS(), []string{"-h"}, false, &help, &errs, nil); err != flag.ErrHelp || !strings.HasPrefix(help.String(), "usage: p cmd [flags]\n  --scheme int") {
		t.Errorf("-h: %v, %q", err, help.String())
	}
	if err := ParseFlags("p", newFS(), []string{"--schem", "1"}, false, &help, &errs, nil); err != ErrUsage ||
		errs.String() != "p cmd: flag provided but not defined: -schem, did you mean \"--scheme\"? (run \"p cmd -h\" for the flags)\n" {
		t.Errorf("typo: %v, %q", err, errs.String())
	}
	errs.Reset()
	if err := ParseFlags("p", newFS(), []string{"x"}, false, &help, &errs, nil); err != ErrUsage || !strings.Contains(errs.String(), `unexpected argument "x"`) {
		t.Errorf("argument: %v, %q", err, errs.String())
	}
	// With arguments, flags may come before, between and after them, as
	// gflags takes them (Caffe's convert_mnist_data A B C --backend=lmdb);
	// "--" ends the flags.
	for _, tc := range []struct {
		args   []string
		scheme int
		rest   []string
	}{
		{[]string{"--scheme=2", "x"}, 2, []string{"x"}},
		{[]string{"x", "y", "--scheme=3"}, 3, []string{"x", "y"}},
		{[]string{"x", "-scheme", "4", "y"}, 4, []string{"x", "y"}},
		{[]string{"x", "--", "--scheme=5"}, 0, []string{"x", "--scheme=5"}},
		{[]string{"--scheme", "6", "--", "-x", "y"}, 6, []string{"-x", "y"}},
		{[]string{"--", "x"}, 0, []string{"x"}},
		{[]string{"x", "-2", "--scheme", "-7", "-1.5"}, -7, []string{"x", "-2", "-1.5"}},
		{nil, 0, nil},
	} {
		fs := newFS()
		err := ParseFlags("p", fs, tc.args, true, &help, &errs, nil)
		if got := fs.Lookup("scheme").Value.(flag.Getter).Get().(int); err != nil || got != tc.scheme || !slices.Equal(fs.Args(), tc.rest) {
			t.Errorf("%q: %v, scheme %d, args %q; want %d, %q", tc.args, err, got, fs.Args(), tc.scheme, tc.rest)
		}
	}
	errs.Reset()
	if err := ParseFlags("p", newFS(), []string{"x", "--nope"}, true, &help, &errs, nil); err != ErrUsage || !strings.Contains(errs.String(), "-nope") {
		t.Errorf("an unknown flag after an argument: %v, %q", err, errs.String())
	}
}

// TestSetUnset: a preset sets the flags not given; those given win.
func TestSetUnset(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	a, b := fs.Int("a", 0, ""), fs.Int("b", 0, "")
	if err := fs.Parse([]string{"--a=1"}); err != nil {
		t.Fatal(err)
	}
	SetUnset(fs, map[string]string{"a": "5", "b": "6"})
	if *a != 1 || *b != 6 {
		t.Errorf("a %d b %d, want 1 6", *a, *b)
	}
	if IsTerminal(&strings.Builder{}) {
		t.Error("a builder is a terminal")
	}
}

// TestProgramRun: a command's outcome becomes the exit status, a failure
// is written after the program's and the command's names, and an unknown
// command is offered the nearest.
func TestProgramRun(t *testing.T) {
	fail := errors.New("boom")
	p := Program{Name: "p", Commands: []Command{
		{Name: "ok", Summary: "works", Run: func(context.Context, []string, io.Writer, io.Writer) error { return nil }},
		{Name: "bad", Run: func(context.Context, []string, io.Writer, io.Writer) error { return ErrUsage }},
		{Name: "fail", Run: func(context.Context, []string, io.Writer, io.Writer) error { return fail }},
		{Name: "two-words", Aliases: []string{"tool_name"}, Run: func(_ context.Context, _ []string, out, _ io.Writer) error {
			_, err := io.WriteString(out, "ran")
			return err
		}},
	}, Failed: func(_ context.Context, cmd string, err error) string { return cmd + " said " + err.Error() }}
	for _, tc := range []struct {
		args      []string
		code      int
		out, errs string
	}{
		{nil, 2, "", "usage: p COMMAND [flags]\ncommands:\n  ok         works\n  bad        \n  fail       \n  two-words  \nrun \"p COMMAND -h\" for a command's flags\n"},
		{[]string{"ok"}, 0, "", ""},
		{[]string{"bad"}, 2, "", ""},
		{[]string{"fail"}, 1, "", "p fail: fail said boom\n"},
		{[]string{"two-words"}, 0, "ran", ""},
		{[]string{"two_words"}, 0, "ran", ""}, // Caffe's tool spelling
		{[]string{"tool_name"}, 0, "ran", ""},
		{[]string{"two words"}, 2, "", "p: unknown command \"two words\", did you mean \"two-words\"? (run \"p help\" for the commands)\n"},
		{[]string{"fial"}, 2, "", "p: unknown command \"fial\", did you mean \"fail\"? (run \"p help\" for the commands)\n"},
	} {
		var out, errs strings.Builder
		if code := p.Run(t.Context(), tc.args, &out, &errs); code != tc.code || out.String() != tc.out || errs.String() != tc.errs {
			t.Errorf("%q: exit %d, %q, %q; want %d, %q, %q", tc.args, code, out.String(), errs.String(), tc.code, tc.out, tc.errs)
		}
	}
}
