package prototxt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits on what Parse accepts, so that no input can exhaust the stack or
// memory. Real Caffe prototxt files are a few kilobytes, nested a few deep.
const (
	// MaxSize is the largest input Parse accepts, in bytes.
	MaxSize = 16 << 20
	// MaxDepth is the deepest nesting of messages Parse accepts.
	MaxDepth = 100
)

// Kind is the lexical kind of a scalar value.
type Kind int

const (
	// KindMessage marks a field whose value is a nested message (Msg).
	KindMessage Kind = iota
	// KindInt is an integer literal: decimal or 0x hex, maybe negative.
	KindInt
	// KindFloat is a literal with a decimal point or an exponent.
	KindFloat
	// KindString is a quoted string; Value holds the decoded bytes.
	KindString
	// KindIdent is a bare identifier: an enum value, true or false.
	KindIdent
)

// String names the kind as error messages say it.
func (k Kind) String() string {
	switch k {
	case KindMessage:
		return "message"
	case KindInt:
		return "integer"
	case KindFloat:
		return "float"
	case KindString:
		return "string"
	case KindIdent:
		return "identifier"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Message is a parsed message: the whole file or a nested "{ ... }".
type Message struct {
	// Pos is where the message starts: its opening brace, or 1:1 for a file.
	Pos Pos
	// Fields holds the fields in source order; a repeated field appears
	// once per value.
	Fields []*Field
}

// Field is one "name: value" or "name { ... }" entry of a Message.
type Field struct {
	Name string
	// Pos is the position of the field name.
	Pos Pos
	// ValuePos is the position of the value (for a message, its brace).
	ValuePos Pos
	// Kind says which of Msg and Value holds the value.
	Kind Kind
	// Msg is the nested message when Kind is KindMessage, else nil.
	Msg *Message
	// Value is the scalar's text: the literal for numbers (without an f
	// suffix) and identifiers, the decoded bytes for strings.
	Value string
}

// Get returns the fields of m named name, in source order.
func (m *Message) Get(name string) []*Field {
	var out []*Field
	for _, f := range m.Fields {
		if f.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// Int returns an integer field's value. It fails, with a message naming
// the value, when the field is not an integer or does not fit in 64 bits.
func (f *Field) Int() (int64, error) {
	if f.Kind != KindInt {
		return 0, fmt.Errorf("expected an integer, found %s", f.describe())
	}
	s, neg := f.Value, false
	if strings.HasPrefix(s, "-") {
		s, neg = s[1:], true
	}
	base := 10
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		s, base = s[2:], 16
	}
	u, err := strconv.ParseUint(s, base, 64)
	if err != nil || !neg && u > math.MaxInt64 || neg && u > 1<<63 {
		return 0, fmt.Errorf("integer %s is out of range", f.Value)
	}
	if neg {
		return -int64(u), nil
	}
	return int64(u), nil
}

// Float returns a numeric field's value; integers are accepted.
func (f *Field) Float() (float64, error) {
	switch f.Kind {
	case KindInt:
		i, err := f.Int()
		return float64(i), err
	case KindFloat:
		v, err := strconv.ParseFloat(f.Value, 64)
		if err != nil {
			return 0, fmt.Errorf("number %s is out of range", f.Value)
		}
		return v, nil
	}
	return 0, fmt.Errorf("expected a number, found %s", f.describe())
}

// Bool returns a boolean field's value: true, True, false, False, 1 or 0,
// as protobuf's text format accepts.
func (f *Field) Bool() (bool, error) {
	switch {
	case f.Kind == KindIdent && (f.Value == "true" || f.Value == "True"),
		f.Kind == KindInt && f.Value == "1":
		return true, nil
	case f.Kind == KindIdent && (f.Value == "false" || f.Value == "False"),
		f.Kind == KindInt && f.Value == "0":
		return false, nil
	}
	return false, fmt.Errorf("expected true or false, found %s", f.describe())
}

// describe names the field's value for error messages.
func (f *Field) describe() string {
	switch f.Kind {
	case KindMessage:
		return "a message"
	case KindString:
		return fmt.Sprintf("string %q", f.Value)
	default:
		return fmt.Sprintf("%s %s", f.Kind, f.Value)
	}
}

// Parse parses src, the contents of the file named filename (used only in
// positions), as one message in protobuf text format. A syntax error is
// returned as an *Error: "file:line:col: expected ..., found ...".
func Parse(filename string, src []byte) (*Message, error) {
	if len(src) > MaxSize {
		return nil, &Error{Pos: Pos{File: filename, Line: 1, Col: 1},
			Msg: fmt.Sprintf("file is %d bytes, more than the %d a prototxt may have", len(src), MaxSize)}
	}
	p := &parser{lex: newLexer(filename, src)}
	if err := p.advance(); err != nil {
		return nil, err
	}
	m := &Message{Pos: Pos{File: filename, Line: 1, Col: 1}}
	if err := p.fields(m, "", 0); err != nil {
		return nil, err
	}
	return m, nil
}

// parser is a recursive-descent parser with one token of lookahead.
type parser struct {
	lex *lexer
	tok token
}

func (p *parser) advance() *Error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) expected(what string) *Error {
	return &Error{Pos: p.tok.pos, Msg: fmt.Sprintf("expected %s, found %s", what, p.tok.describe())}
}

func (p *parser) isPunct(c string) bool { return p.tok.kind == tokPunct && p.tok.text == c }

// fields parses fields into m until the closing punctuation close ("" for
// end of file), which it consumes.
func (p *parser) fields(m *Message, close string, depth int) *Error {
	for {
		if close == "" && p.tok.kind == tokEOF || close != "" && p.isPunct(close) {
			if close != "" {
				return p.advance()
			}
			return nil
		}
		if p.tok.kind != tokIdent {
			if close == "" {
				return p.expected("field name")
			}
			return p.expected(fmt.Sprintf("field name or '%s'", close))
		}
		if err := p.field(m, depth); err != nil {
			return err
		}
		if p.isPunct(",") || p.isPunct(";") {
			if err := p.advance(); err != nil {
				return err
			}
		}
	}
}

// field parses one field (several for the list form) and appends it to m.
func (p *parser) field(m *Message, depth int) *Error {
	name, namePos := p.tok.text, p.tok.pos
	if err := p.advance(); err != nil {
		return err
	}
	colon := p.isPunct(":")
	if colon {
		if err := p.advance(); err != nil {
			return err
		}
	}
	switch {
	case p.isPunct("{") || p.isPunct("<"):
		f, err := p.message(name, namePos, depth)
		if err != nil {
			return err
		}
		m.Fields = append(m.Fields, f)
		return nil
	case !colon:
		return p.expected("':' or '{'")
	case p.isPunct("["):
		return p.list(m, name, namePos, depth)
	}
	f, err := p.scalar(name, namePos)
	if err != nil {
		return err
	}
	m.Fields = append(m.Fields, f)
	return nil
}

// message parses a nested message starting at '{' or '<'.
func (p *parser) message(name string, namePos Pos, depth int) (*Field, *Error) {
	if depth+1 > MaxDepth {
		return nil, &Error{Pos: p.tok.pos, Msg: fmt.Sprintf("messages nested more than %d deep", MaxDepth)}
	}
	close := "}"
	if p.tok.text == "<" {
		close = ">"
	}
	sub := &Message{Pos: p.tok.pos}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.fields(sub, close, depth+1); err != nil {
		return nil, err
	}
	return &Field{Name: name, Pos: namePos, ValuePos: sub.Pos, Kind: KindMessage, Msg: sub}, nil
}

// list parses "[a, b, ...]" (scalars or messages), one Field per element.
func (p *parser) list(m *Message, name string, namePos Pos, depth int) *Error {
	if err := p.advance(); err != nil {
		return err
	}
	if p.isPunct("]") {
		return p.advance()
	}
	for {
		var f *Field
		var err *Error
		if p.isPunct("{") || p.isPunct("<") {
			f, err = p.message(name, namePos, depth)
		} else {
			f, err = p.scalar(name, namePos)
		}
		if err != nil {
			return err
		}
		m.Fields = append(m.Fields, f)
		switch {
		case p.isPunct(","):
			if err := p.advance(); err != nil {
				return err
			}
		case p.isPunct("]"):
			return p.advance()
		default:
			return p.expected("',' or ']'")
		}
	}
}

// scalar parses one scalar value; adjacent strings are concatenated.
func (p *parser) scalar(name string, namePos Pos) (*Field, *Error) {
	f := &Field{Name: name, Pos: namePos, ValuePos: p.tok.pos, Value: p.tok.text}
	switch p.tok.kind {
	case tokInt:
		f.Kind = KindInt
	case tokFloat:
		f.Kind = KindFloat
	case tokIdent:
		f.Kind = KindIdent
	case tokString:
		f.Kind = KindString
		var b strings.Builder
		for p.tok.kind == tokString {
			b.WriteString(p.tok.text)
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		f.Value = b.String()
		return f, nil
	default:
		return nil, p.expected("a value")
	}
	return f, p.advance()
}
