package prototxt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// flat renders a message as one line per field, "line:col name=kind:value",
// with nested fields indented, so tests can compare structure and positions.
func flat(m *Message) string {
	var b strings.Builder
	var walk func(m *Message, indent string)
	walk = func(m *Message, indent string) {
		for _, f := range m.Fields {
			fmt.Fprintf(&b, "%s%d:%d %s", indent, f.Pos.Line, f.Pos.Col, f.Name)
			if f.Kind == KindMessage {
				fmt.Fprintf(&b, " {%d:%d}\n", f.Msg.Pos.Line, f.Msg.Pos.Col)
				walk(f.Msg, indent+"  ")
				continue
			}
			fmt.Fprintf(&b, "=%s:%q@%d:%d\n", f.Kind, f.Value, f.ValuePos.Line, f.ValuePos.Col)
		}
	}
	walk(m, "")
	return b.String()
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", ""},
		{"comment only", "# nothing\n  # here\n", ""},
		{"scalars", "a: 1\nb: -2.5e-3\nc: \"x\"\nd: MAX\n", "" +
			"1:1 a=integer:\"1\"@1:4\n" +
			"2:1 b=float:\"-2.5e-3\"@2:4\n" +
			"3:1 c=string:\"x\"@3:4\n" +
			"4:1 d=identifier:\"MAX\"@4:4\n"},
		{"float forms", "a: .5 b: 5. c: 1e4 d: 1.5f e: -.25 f: 0x1F", "" +
			"1:1 a=float:\".5\"@1:4\n" +
			"1:7 b=float:\"5.\"@1:10\n" +
			"1:13 c=float:\"1e4\"@1:16\n" +
			"1:20 d=float:\"1.5\"@1:23\n" +
			"1:28 e=float:\"-.25\"@1:31\n" +
			"1:36 f=integer:\"0x1F\"@1:39\n"},
		{"nested forms", "layer {\n  name: 'a'\n}\np: { x: 1 }\nq < y: 2 >\n", "" +
			"1:1 layer {1:7}\n" +
			"  2:3 name=string:\"a\"@2:9\n" +
			"4:1 p {4:4}\n" +
			"  4:6 x=integer:\"1\"@4:9\n" +
			"5:1 q {5:3}\n" +
			"  5:5 y=integer:\"2\"@5:8\n"},
		{"separators", "a: 1, b: 2; c: 3\tlayer { d: 4; };", "" +
			"1:1 a=integer:\"1\"@1:4\n" +
			"1:7 b=integer:\"2\"@1:10\n" +
			"1:13 c=integer:\"3\"@1:16\n" +
			"1:18 layer {1:24}\n" +
			"  1:26 d=integer:\"4\"@1:29\n"},
		{"list form", "dim: [1, 2,3]\nempty: []\nm: [{a: 1}, {a: 2}]", "" +
			"1:1 dim=integer:\"1\"@1:7\n" +
			"1:1 dim=integer:\"2\"@1:10\n" +
			"1:1 dim=integer:\"3\"@1:12\n" +
			"3:1 m {3:5}\n" +
			"  3:6 a=integer:\"1\"@3:9\n" +
			"3:1 m {3:13}\n" +
			"  3:14 a=integer:\"2\"@3:17\n"},
		{"escapes", `s: "a\n\t\"\\\'\x41\101\u00e9" t: 'it''s' "!"`, "" +
			"1:1 s=string:\"a\\n\\t\\\"\\\\'AAé\"@1:4\n" +
			"1:32 t=string:\"its!\"@1:35\n"},
		{"comment after value", "a: 1 # one\nb: 2", "" +
			"1:1 a=integer:\"1\"@1:4\n" +
			"2:1 b=integer:\"2\"@2:4\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("f.prototxt", []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := flat(m); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if m.Pos.String() != "f.prototxt:1:1" {
				t.Errorf("root Pos = %v", m.Pos)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"missing colon", "a 1", "f:1:3: expected ':' or '{', found number 1"},
		{"unclosed", "layer {\n  a: 1\n", "f:3:1: expected field name or '}', found end of file"},
		{"stray close", "a: 1\n}", "f:2:1: expected field name, found '}'"},
		{"wrong close", "a < b: 1 }", "f:1:10: expected field name or '>', found '}'"},
		{"missing value", "a: }", "f:1:4: expected a value, found '}'"},
		{"value is colon", "a: :", "f:1:4: expected a value, found ':'"},
		{"unterminated string", "a: \"abc\nb: 1", "f:1:4: unterminated string"},
		{"bad escape", `a: "\q"`, `f:1:5: unknown escape sequence \q`},
		{"short unicode", `a: "\u12"`, `f:1:5: \u escape needs 4 hex digits`},
		{"octal range", `a: "\777"`, `f:1:5: octal escape \777 is out of range`},
		{"bad number", "a: 12abc", "f:1:4: malformed number \"12abc\""},
		{"bad exponent", "a: 1e+", "f:1:4: malformed number \"1e+\": exponent has no digits"},
		{"bad hex", "a: 0x", "f:1:4: malformed hex number \"0x\""},
		{"inf", "a: -inf", "f:1:4: expected a number after '-'"},
		{"bad char", "a: 1\n  @", "f:2:3: unexpected character '@'"},
		{"list sep", "a: [1 2]", "f:1:7: expected ',' or ']', found number 2"},
		{"list trailing comma", "a: [1,]", "f:1:7: expected a value, found ']'"},
		{"field name number", "1: 2", "f:1:1: expected field name, found number 1"},
		{"extension name", "[ext]: 2", "f:1:1: expected field name, found '['"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want error %q", tt.src, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n%s\nwant prefix\n%s", err, tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not *Error", err)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	deep := strings.Repeat("a {", MaxDepth) + strings.Repeat("}", MaxDepth)
	if _, err := Parse("f", []byte(deep)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	tooDeep := strings.Repeat("a {", MaxDepth+1) + strings.Repeat("}", MaxDepth+1)
	_, err := Parse("f", []byte(tooDeep))
	if err == nil || !strings.Contains(err.Error(), "nested more than 100 deep") {
		t.Errorf("depth %d: err = %v", MaxDepth+1, err)
	}
	big := make([]byte, MaxSize+1)
	for i := range big {
		big[i] = ' '
	}
	_, err = Parse("big", big)
	if err == nil || !strings.HasPrefix(err.Error(), "big:1:1: file is") {
		t.Errorf("oversize: err = %v", err)
	}
}

func TestFieldValues(t *testing.T) {
	m, err := Parse("f", []byte(`i: 42 n: -7 h: 0x10 nh: -0x10 big: 9223372036854775808
		min: -9223372036854775808 f: 2.5 e: 1e500 s: "x" b1: true b2: False b3: 1 b4: 0 b5: yes`))
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *Field { return m.Get(name)[0] }
	ints := []struct {
		name string
		want int64
		err  string
	}{
		{"i", 42, ""}, {"n", -7, ""}, {"h", 16, ""}, {"nh", -16, ""},
		{"min", -1 << 63, ""},
		{"big", 0, "integer 9223372036854775808 is out of range"},
		{"f", 0, "expected an integer, found float 2.5"},
		{"s", 0, `expected an integer, found string "x"`},
	}
	for _, tt := range ints {
		got, err := get(tt.name).Int()
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s.Int() err = %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s.Int() = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	if v, err := get("f").Float(); err != nil || v != 2.5 {
		t.Errorf("f.Float() = %v, %v", v, err)
	}
	if v, err := get("n").Float(); err != nil || v != -7 {
		t.Errorf("n.Float() = %v, %v", v, err)
	}
	if _, err := get("e").Float(); err == nil {
		t.Errorf("1e500.Float() succeeded")
	}
	if _, err := get("s").Float(); err == nil || err.Error() != `expected a number, found string "x"` {
		t.Errorf("s.Float() err = %v", err)
	}
	bools := map[string]bool{"b1": true, "b2": false, "b3": true, "b4": false}
	for name, want := range bools {
		if got, err := get(name).Bool(); err != nil || got != want {
			t.Errorf("%s.Bool() = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := get("b5").Bool(); err == nil || err.Error() != "expected true or false, found identifier yes" {
		t.Errorf("b5.Bool() err = %v", err)
	}
	if n := len(m.Get("nothing")); n != 0 {
		t.Errorf("Get(nothing) has %d fields", n)
	}
}

// sameTree compares two parsed messages ignoring positions.
func sameTree(a, b *Message) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i, fa := range a.Fields {
		fb := b.Fields[i]
		if fa.Name != fb.Name || fa.Kind != fb.Kind || fa.Value != fb.Value {
			return false
		}
		if fa.Kind == KindMessage && !sameTree(fa.Msg, fb.Msg) {
			return false
		}
	}
	return true
}

func TestFormatRoundTrip(t *testing.T) {
	src := "name: \"LeNet\"\nlayer { name: 'c\\x00\\n' dim: [1, 2] p < a: 1.5e3 > q: { } }; e: MAX, f: -0x1f"
	m, err := Parse("f", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out := Format(m)
	m2, err := Parse("g", out)
	if err != nil {
		t.Fatalf("reparse of\n%s\nfailed: %v", out, err)
	}
	if !sameTree(m, m2) {
		t.Errorf("round trip changed the tree:\n%s", out)
	}
	if !strings.Contains(string(out), "layer {\n  name: \"c\\x00\\n\"\n  dim: 1\n  dim: 2\n") {
		t.Errorf("unexpected format:\n%s", out)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "a: 1", "layer { name: \"x\" top: 'y' include { phase: TRAIN } }",
		"dim: [1, 2, 3] m: [{a: 1}]", "a: -1.5e-3f; b: 0x10, c: \"\\u00e9\\101\"",
		"a < b: { c: 1 } >", "a: {", "\"", "a: [", "#",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse("fuzz", src)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Pos.Line < 1 || pe.Pos.Col < 1 {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		out := Format(m)
		m2, err := Parse("fuzz2", out)
		if err != nil {
			t.Fatalf("reparse of formatted\n%s\nfailed: %v", out, err)
		}
		if !sameTree(m, m2) {
			t.Fatalf("format round trip changed the tree:\n%s", out)
		}
		for _, fl := range m.Fields {
			_, _ = fl.Int()
			_, _ = fl.Float()
			_, _ = fl.Bool()
		}
	})
}
