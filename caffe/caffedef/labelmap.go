package caffedef

import (
	"fmt"
	"os"
	"strings"

	"dsgd/caffe/prototxt"
)

// LabelMapItem is one item of SSD's LabelMap (its labelmap_voc.prototxt):
// a class's name in the annotation files, its label, and the name to show.
type LabelMapItem struct {
	Name        string
	Label       int32
	DisplayName string
	// Pos is where the item starts in its file.
	Pos prototxt.Pos
}

// LabelMap is SSD's LabelMap message: "item { name label display_name }"
// entries, in file order.
type LabelMap struct {
	Items []LabelMapItem
}

// ReadLabelMap reads a LabelMap prototxt file (ParseLabelMap).
func ReadLabelMap(filename string) (*LabelMap, error) {
	src, err := os.ReadFile(filename)
	if err != nil {
		return nil, fmt.Errorf("label map: %w", err)
	}
	return ParseLabelMap(filename, src)
}

// ParseLabelMap parses a LabelMap in the protobuf text format, as the
// fork's ReadProtoFromTextFile does: fields other than item, and item
// fields other than name, label and display_name, are refused, as is a
// field given twice in one item; a missing name or display_name is "",
// a missing label 0. Errors name filename:line:col.
func ParseLabelMap(filename string, src []byte) (*LabelMap, error) {
	msg, err := prototxt.Parse(filename, src)
	if err != nil {
		return nil, err
	}
	m := &LabelMap{}
	for _, f := range msg.Fields {
		if f.Name != "item" {
			return nil, &prototxt.Error{Pos: f.Pos, Msg: fmt.Sprintf("unknown field %q in a LabelMap (it holds item { name label display_name } entries)", f.Name)}
		}
		if f.Kind != prototxt.KindMessage {
			return nil, &prototxt.Error{Pos: f.Pos, Msg: "item is a message: write item { name: ... label: ... }"}
		}
		it := LabelMapItem{Pos: f.Pos}
		seen := map[string]bool{}
		for _, g := range f.Msg.Fields {
			if seen[g.Name] {
				return nil, &prototxt.Error{Pos: g.Pos, Msg: fmt.Sprintf("item field %s given twice", g.Name)}
			}
			seen[g.Name] = true
			switch g.Name {
			case "name", "display_name":
				if g.Kind != prototxt.KindString {
					return nil, &prototxt.Error{Pos: g.ValuePos, Msg: fmt.Sprintf("%s must be a quoted string, found %s", g.Name, article(g.Kind))}
				}
				if g.Name == "name" {
					it.Name = g.Value
				} else {
					it.DisplayName = g.Value
				}
			case "label":
				if g.Kind != prototxt.KindInt {
					return nil, &prototxt.Error{Pos: g.ValuePos, Msg: fmt.Sprintf("label must be an integer, found %s", article(g.Kind))}
				}
				v, err := g.Int()
				if err != nil || v < -1<<31 || v > 1<<31-1 {
					return nil, &prototxt.Error{Pos: g.ValuePos, Msg: fmt.Sprintf("label %s does not fit an int32", g.Value)}
				}
				it.Label = int32(v)
			default:
				return nil, &prototxt.Error{Pos: g.Pos, Msg: fmt.Sprintf("unknown item field %q (a LabelMapItem has name, label and display_name)", g.Name)}
			}
		}
		m.Items = append(m.Items, it)
	}
	return m, nil
}

// NameToLabel maps the items' names to their labels, as the fork's
// MapNameToLabel: with strict (convert_annoset's --check_label) a name
// given twice is an error naming both items; without it the last item of
// a name wins. As in the fork, two names may share a label.
func (m *LabelMap) NameToLabel(strict bool) (map[string]int32, error) {
	out := make(map[string]int32, len(m.Items))
	first := make(map[string]prototxt.Pos, len(m.Items))
	for _, it := range m.Items {
		if p, dup := first[it.Name]; dup && strict {
			return nil, &prototxt.Error{Pos: it.Pos, Msg: fmt.Sprintf("name %q is given again (first at line %d): --check_label refuses duplicate names", it.Name, p.Line)}
		}
		if _, ok := first[it.Name]; !ok {
			first[it.Name] = it.Pos
		}
		out[it.Name] = it.Label
	}
	return out, nil
}

// article names a kind with its indefinite article ("an integer").
func article(k prototxt.Kind) string {
	s := k.String()
	if strings.ContainsAny(s[:1], "aeiou") {
		return "an " + s
	}
	return "a " + s
}
