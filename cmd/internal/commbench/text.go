package commbench

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes s as text: each block's lines, then its table
// (Table.WriteText).
func (s Section) WriteText(w io.Writer) {
	for _, b := range s.Blocks {
		for _, l := range b.Lines {
			fmt.Fprintln(w, l)
		}
		if b.Table != nil {
			b.Table.WriteText(w)
		}
	}
}

// WriteText writes t's header row, its spanning labels if any, then its
// rows: each cell padded to its column's width (the widest cell where the
// column sets none), aligned right unless the column says left.
func (t *Table) WriteText(w io.Writer) {
	width := make([]int, len(t.Cols))
	for i, c := range t.Cols {
		width[i] = c.Width
		if c.Width == 0 {
			width[i] = len(c.Name)
			for _, r := range t.Rows {
				if i < len(r) {
					width[i] = max(width[i], len(r[i]))
				}
			}
		}
	}
	sep := func(i int) string {
		switch {
		case i == 0:
			return ""
		case t.Cols[i].Sep == "":
			return " "
		}
		return t.Cols[i].Sep
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, c := range cells {
			b.WriteString(sep(i))
			if t.Cols[i].Left {
				fmt.Fprintf(&b, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(&b, "%*s", width[i], c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
	head := make([]string, len(t.Cols))
	for i, c := range t.Cols {
		head[i] = c.Name
	}
	line(head)
	if len(t.Spans) > 0 {
		var b strings.Builder
		i := 0
		for _, s := range t.Spans {
			span := 0
			for j := i; j < i+s.N; j++ {
				if j > i {
					span += len(sep(j))
				}
				span += width[j]
			}
			b.WriteString(sep(i))
			fmt.Fprintf(&b, "%*s", span, s.Label)
			i += s.N
		}
		fmt.Fprintln(w, b.String())
	}
	for _, r := range t.Rows {
		line(r)
	}
}
