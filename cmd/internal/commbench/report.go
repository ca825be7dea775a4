package commbench

// Section is one part of bench-comm's report, as data for the command to
// print: the run's header, the memory bandwidth, the allreduce table, the
// parameter server vs tree table, the run's footer. Its blocks come in
// order.
type Section struct {
	// Part names it: "header", "mem", "allreduce", "ps" or "footer".
	Part   string
	Blocks []Block
}

// Block is lines of text (the title, the legend, the notes; "" is an
// empty line), then a table when Table is set.
type Block struct {
	Lines []string
	Table *Table
}

// Table is rows of cells under named columns: a header row of the
// columns' names, an optional second header row of labels spanning
// columns (Spans), then Rows, each with one cell per column.
type Table struct {
	Cols  []Col
	Spans []Span
	Rows  [][]string
}

// Col is a table column: its name, its width (0: as wide as its widest
// cell or name), whether its cells are aligned left (else right), and the
// separator printed before it ("" for one space; the first column has
// none).
type Col struct {
	Name  string
	Width int
	Left  bool
	Sep   string
}

// Span is a label over N adjacent columns of the second header row,
// aligned right across their width.
type Span struct {
	Label string
	N     int
}

// text appends lines to s as a block of text alone.
func (s *Section) text(lines ...string) {
	s.Blocks = append(s.Blocks, Block{Lines: lines})
}
