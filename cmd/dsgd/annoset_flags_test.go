//go:build !purego

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertAnnosetRefusals: every command line convert-annoset does not
// take is refused, with exit status 2 for the invocation and 1 for bad
// input, and a message saying what and why; none leaves a database.
func TestConvertAnnosetRefusals(t *testing.T) {
	root, err := filepath.Abs(annosetFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dup := write(t, dir, "dup.prototxt", "item { name: \"cat\" label: 1 }\nitem { name: \"cat\" label: 2 }\n")
	write(t, dir, "horse.xml", "<annotation>\n<object><name>horse</name></object></annotation>\n")
	if err := os.Symlink(filepath.Join(root, "JPEGImages"), filepath.Join(dir, "JPEGImages")); err != nil {
		t.Fatal(err)
	}
	horse := write(t, dir, "horse.txt", "JPEGImages/a.jpg horse.xml\n")
	lm := "--label_map_file=" + filepath.Join(root, "labelmap.prototxt")
	list := filepath.Join(root, "voc.txt")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nothing", nil, 2, "--list and --out are required (or ROOTFOLDER/ LISTFILE DB_NAME)"},
		{"two arguments", []string{root + "/", list}, 2, `2 arguments`},
		{"both forms", []string{"--list", list, root + "/", list, "@"}, 2, "ROOTFOLDER/ LISTFILE DB_NAME given with --list"},
		{"anno_type", []string{"--anno_type=segmentation", root + "/", list, "@"}, 2, `--anno_type "segmentation": give classification or detection`},
		{"label_type", []string{"--anno_type=detection", "--label_type=yaml", lm, root + "/", list, "@"}, 2, `--label_type "yaml": give xml, json or txt`},
		{"no label map", []string{"--anno_type=detection", root + "/", list, "@"}, 2, "--label_map_file is required for --anno_type detection"},
		{"min_dim", []string{"--anno_type=detection", lm, "--min_dim=300", root + "/", list, "@"}, 2, "--min_dim 300 --max_dim 0: not supported: the fork's aspect-keeping resize"},
		{"max_dim", []string{"--max_dim", "500", root + "/", list, "@"}, 2, "--max_dim 500: not supported"},
		{"half a resize", []string{"--resize_height=300", root + "/", list, "@"}, 2, "--resize_height 300 and --resize_width 0: give both"},
		{"negative resize", []string{"--resize_height=-1", "--resize_width=-1", root + "/", list, "@"}, 2, "give both, positive"},
		{"encode_type", []string{"--encode_type=bmp", root + "/", list, "@"}, 2, `--encode_type "bmp": not supported: dsgd encodes jpg and png`},
		{"bmp in capitals", []string{"--encode_type=BMP", root + "/", list, "@"}, 2, `--encode_type "BMP": not supported`},
		{"backend", []string{"--backend=rocksdb", root + "/", list, "@"}, 2, "--backend:"},
		{"duplicate names with check_label", []string{"--anno_type=detection", "--label_map_file=" + dup, "--check_label", root + "/", list, "@"}, 1, `dup.prototxt:2:1: name "cat" is given again (first at line 1)`},
		{"missing label map", []string{"--anno_type=detection", "--label_map_file=" + filepath.Join(dir, "none"), root + "/", list, "@"}, 1, "label map: open"},
		{"name not in the map", []string{"--anno_type=detection", lm, dir + "/", horse, "@"}, 1, `horse.txt:1: ` + filepath.Join(dir, "horse.xml") + `:2: object name "horse" is not in the label map`},
		{"classification label", []string{root + "/", list, "@"}, 1, `voc.txt:1: label "Annotations/a.xml" is not an int32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "db")
			args := []string{"convert-annoset"}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "@", out))
			}
			code, stdout, stderr := runCmd(t, "", args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a refused command left %s (%v)", out, err)
			}
		})
	}
}
