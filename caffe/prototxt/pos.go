package prototxt

import "fmt"

// Pos is a position in a source file. Line and Col are 1-based; Col counts
// bytes, so a tab is one column.
type Pos struct {
	File string
	Line int
	Col  int
}

// String formats p as "file:line:col", the form editors and compilers use.
func (p Pos) String() string {
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is an error at a position in a prototxt file: a syntax error from
// Parse, or a schema error from a package that interprets the parsed
// message (the caffedef package returns these too).
type Error struct {
	Pos Pos
	// Msg says what was wrong ("expected '}', found end of file").
	Msg string
}

// Error formats e as "file:line:col: msg".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }
