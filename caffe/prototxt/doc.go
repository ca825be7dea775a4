// Package prototxt parses the protocol buffer text format as Caffe's
// .prototxt files use it, into an untyped tree of messages and fields that
// remembers where every field came from.
//
// It owns the syntax only: it knows nothing of Caffe's schema, so it never
// rejects a field name or checks a value against a type. The caffedef package
// walks the tree and turns it into typed configs, reporting unknown fields
// and bad values at the positions recorded here.
//
// The canonical use:
//
//	msg, err := prototxt.Parse("lenet.prototxt", src)
//	if err != nil {
//		return err // "lenet.prototxt:14:5: expected ':' or '{', found ..."
//	}
//	for _, f := range msg.Fields {
//		fmt.Println(f.Pos, f.Name, f.Value)
//	}
//
// Supported syntax: "name: value" fields; nested messages written
// "name { ... }", "name: { ... }" or with angle brackets; repeated fields by
// repetition or in the list form "dim: [1, 2]" (a list becomes one Field
// per element); "#" comments; integers (decimal or 0x hex, optionally
// negative), floats (1e-4, .5, -3.0, an optional f suffix), double- or
// single-quoted strings with C escapes (adjacent strings concatenate), and
// identifiers (enum values, true, false). Fields may be separated by
// whitespace, "," or ";". Not supported: inf and nan literals, extension
// names in brackets, and Any expansions.
//
// Inputs are bounded so that hostile files cannot exhaust memory or the
// stack: at most MaxSize bytes and MaxDepth levels of nesting.
package prototxt
