package prototxt

import (
	"strconv"
	"strings"
)

// Format writes m back as text format, one field per line, nested messages
// indented by two spaces. Parsing the result gives the same fields and
// values (positions aside); comments and the list form are not kept.
func Format(m *Message) []byte {
	var b strings.Builder
	format(&b, m, 0)
	return []byte(b.String())
}

func format(b *strings.Builder, m *Message, depth int) {
	indent := strings.Repeat("  ", depth)
	for _, f := range m.Fields {
		b.WriteString(indent)
		b.WriteString(f.Name)
		switch f.Kind {
		case KindMessage:
			b.WriteString(" {\n")
			format(b, f.Msg, depth+1)
			b.WriteString(indent)
			b.WriteString("}\n")
			continue
		case KindString:
			b.WriteString(": ")
			b.WriteString(strconv.Quote(f.Value))
		default:
			b.WriteString(": ")
			b.WriteString(f.Value)
		}
		b.WriteByte('\n')
	}
}
