package prototxt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind classifies a token.
type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokInt
	tokFloat
	tokString
	tokPunct // one of { } [ ] < > : , ;
)

// token is one lexical token. For tokString, text holds the decoded bytes;
// for numbers it holds the literal without any f suffix; for tokPunct the
// character itself.
type token struct {
	kind tokKind
	text string
	pos  Pos
}

// describe names the token for "found ..." in error messages.
func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of file"
	case tokIdent:
		return fmt.Sprintf("identifier %s", t.text)
	case tokInt, tokFloat:
		return fmt.Sprintf("number %s", t.text)
	case tokString:
		s := t.text
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return fmt.Sprintf("string %q", s)
	default:
		return fmt.Sprintf("'%s'", t.text)
	}
}

// lexer turns source bytes into tokens, tracking line and column.
type lexer struct {
	file string
	src  []byte
	off  int
	line int
	col  int
}

func newLexer(file string, src []byte) *lexer {
	return &lexer{file: file, src: src, line: 1, col: 1}
}

func (l *lexer) pos() Pos { return Pos{File: l.file, Line: l.line, Col: l.col} }

func (l *lexer) errorf(p Pos, format string, args ...any) *Error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// advance consumes n bytes that contain no newline.
func (l *lexer) advance(n int) {
	l.off += n
	l.col += n
}

// peekByte returns the byte k ahead, or 0 past the end.
func (l *lexer) peekByte(k int) byte {
	if l.off+k < len(l.src) {
		return l.src[l.off+k]
	}
	return 0
}

// skipSpace skips whitespace and # comments.
func (l *lexer) skipSpace() {
	for l.off < len(l.src) {
		switch c := l.src[l.off]; c {
		case '\n':
			l.off++
			l.line++
			l.col = 1
		case ' ', '\t', '\r', '\v', '\f':
			l.advance(1)
		case '#':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		default:
			return
		}
	}
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// next returns the next token.
func (l *lexer) next() (token, *Error) {
	l.skipSpace()
	p := l.pos()
	if l.off >= len(l.src) {
		return token{kind: tokEOF, pos: p}, nil
	}
	c := l.src[l.off]
	switch {
	case isLetter(c):
		start := l.off
		for l.off < len(l.src) && (isLetter(l.src[l.off]) || isDigit(l.src[l.off])) {
			l.advance(1)
		}
		return token{kind: tokIdent, text: string(l.src[start:l.off]), pos: p}, nil
	case isDigit(c) || c == '.' && isDigit(l.peekByte(1)) ||
		c == '-' && (isDigit(l.peekByte(1)) || l.peekByte(1) == '.' && isDigit(l.peekByte(2))):
		return l.number(p)
	case c == '"' || c == '\'':
		return l.str(p)
	case strings.IndexByte("{}[]<>:,;", c) >= 0:
		l.advance(1)
		return token{kind: tokPunct, text: string(c), pos: p}, nil
	}
	if c == '-' {
		return token{}, l.errorf(p, "expected a number after '-' (inf and nan are not supported)")
	}
	r, _ := utf8.DecodeRune(l.src[l.off:])
	return token{}, l.errorf(p, "unexpected character %q", r)
}

// number lexes an integer or float literal, with an optional leading '-'.
func (l *lexer) number(p Pos) (token, *Error) {
	start := l.off
	if l.src[l.off] == '-' {
		l.advance(1)
	}
	kind := tokInt
	if l.peekByte(0) == '0' && (l.peekByte(1) == 'x' || l.peekByte(1) == 'X') {
		l.advance(2)
		n := 0
		for isHex(l.peekByte(0)) {
			l.advance(1)
			n++
		}
		if n == 0 {
			return token{}, l.errorf(p, "malformed hex number %q", l.src[start:l.off])
		}
	} else {
		for isDigit(l.peekByte(0)) {
			l.advance(1)
		}
		if l.peekByte(0) == '.' {
			kind = tokFloat
			l.advance(1)
			for isDigit(l.peekByte(0)) {
				l.advance(1)
			}
		}
		if c := l.peekByte(0); c == 'e' || c == 'E' {
			kind = tokFloat
			l.advance(1)
			if c := l.peekByte(0); c == '+' || c == '-' {
				l.advance(1)
			}
			if !isDigit(l.peekByte(0)) {
				return token{}, l.errorf(p, "malformed number %q: exponent has no digits", l.src[start:l.off])
			}
			for isDigit(l.peekByte(0)) {
				l.advance(1)
			}
		}
	}
	end := l.off
	if c := l.peekByte(0); kind == tokFloat && (c == 'f' || c == 'F') {
		l.advance(1)
	}
	if c := l.peekByte(0); isLetter(c) || isDigit(c) || c == '.' {
		for c := l.peekByte(0); isLetter(c) || isDigit(c) || c == '.'; c = l.peekByte(0) {
			l.advance(1)
		}
		return token{}, l.errorf(p, "malformed number %q", l.src[start:l.off])
	}
	return token{kind: kind, text: string(l.src[start:end]), pos: p}, nil
}

// str lexes one quoted string, decoding C escapes.
func (l *lexer) str(p Pos) (token, *Error) {
	quote := l.src[l.off]
	l.advance(1)
	var b strings.Builder
	for {
		if l.off >= len(l.src) || l.src[l.off] == '\n' {
			return token{}, l.errorf(p, "unterminated string")
		}
		c := l.src[l.off]
		if c == quote {
			l.advance(1)
			return token{kind: tokString, text: b.String(), pos: p}, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			l.advance(1)
			continue
		}
		ep := l.pos()
		l.advance(1)
		if l.off >= len(l.src) || l.src[l.off] == '\n' {
			return token{}, l.errorf(p, "unterminated string")
		}
		e := l.src[l.off]
		l.advance(1)
		switch e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for i := 0; i < 2 && '0' <= l.peekByte(0) && l.peekByte(0) <= '7'; i++ {
				v = v*8 + int(l.peekByte(0)-'0')
				l.advance(1)
			}
			if v > 255 {
				return token{}, l.errorf(ep, "octal escape \\%o is out of range", v)
			}
			b.WriteByte(byte(v))
		case 'x', 'X':
			v, n := 0, 0
			for ; n < 2 && isHex(l.peekByte(0)); n++ {
				v = v*16 + hexVal(l.peekByte(0))
				l.advance(1)
			}
			if n == 0 {
				return token{}, l.errorf(ep, "\\x escape has no hex digits")
			}
			b.WriteByte(byte(v))
		case 'u', 'U':
			digits := 4
			if e == 'U' {
				digits = 8
			}
			v := 0
			for i := 0; i < digits; i++ {
				if !isHex(l.peekByte(0)) {
					return token{}, l.errorf(ep, "\\%c escape needs %d hex digits", e, digits)
				}
				v = v*16 + hexVal(l.peekByte(0))
				l.advance(1)
			}
			if v > utf8.MaxRune {
				return token{}, l.errorf(ep, "\\%c escape is beyond Unicode", e)
			}
			b.WriteRune(rune(v))
		default:
			return token{}, l.errorf(ep, "unknown escape sequence \\%c", e)
		}
	}
}

func hexVal(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}
