package data

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"dsgd/data/db"
)

// SourceConfig names where a Caffe data layer's images come from.
type SourceConfig struct {
	// Type is the layer type: "Data", "ImageData" or "HDF5Data".
	Type string
	// Path is the layer's source: for Data, a database directory, a
	// built-in data set name or a directory of IDX / CIFAR-10 files; for
	// ImageData, a list file of "path label" lines; for HDF5Data, a list
	// file of .h5 paths.
	Path string
	// Split picks the split of a built-in data set or IDX directory (a
	// database or list file is one split already).
	Split Split
	// Backend is a Data layer's database backend; with AnyBackend, the
	// backend the database directory turns out to hold is used instead.
	Backend    db.Backend
	AnyBackend bool
	// Tops are the layer's tops: HDF5Data reads the datasets they name
	// (default "data" and "label").
	Tops []string
	// Channels, RootFolder, NewHeight and NewWidth decode ImageData's
	// images (and Channels a database's encoded ones): see DataSettings
	// in package caffedef.
	Channels            int
	RootFolder          string
	NewHeight, NewWidth int
}

// OpenSource opens what a data layer reads. Errors name the source, and
// the list line or database key at fault.
func OpenSource(cfg SourceConfig) (*Dataset, error) {
	switch cfg.Type {
	case "ImageData":
		return ReadImageList(cfg.Path, cfg.RootFolder, Decoding{Channels: cfg.Channels, Height: cfg.NewHeight, Width: cfg.NewWidth})
	case "HDF5Data":
		tops := cfg.Tops
		if len(tops) == 0 {
			tops = []string{"data", "label"}
		}
		return ReadHDF5Tops(cfg.Path, tops)
	case "Data":
	default:
		return nil, fmt.Errorf("data source %s: layer type %q reads no data source", cfg.Path, cfg.Type)
	}
	if b, ok := db.Detect(cfg.Path); ok {
		if cfg.AnyBackend {
			cfg.Backend = b
		}
		return OpenDB(cfg.Path, DBConfig{Backend: cfg.Backend, Channels: cfg.Channels})
	}
	if isBuiltin(cfg.Path) {
		return Open(cfg.Path, cfg.Split)
	}
	if _, err := os.Stat(cfg.Path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("data source %s does not exist: want a %s database of Caffe Datum records (make one with dsgd convert-imageset or convert-mnist), a built-in data set (fashion-mnist, mnist, cifar10, synthetic) or a directory of %s", cfg.Path, strings.ToUpper(cfg.Backend.String()), wantFiles)
	}
	return Open(cfg.Path, cfg.Split)
}

func isBuiltin(spec string) bool {
	return spec == "fashion-mnist" || spec == "mnist" || spec == "cifar10" || spec == "synthetic" || strings.HasPrefix(spec, "synthetic:")
}

// ListEntry is one line of a Caffe image list file.
type ListEntry struct {
	// Path is the image's path as written (before any root folder).
	Path string
	// Label is the line's integer label.
	Label int
	// Line is the line number, from 1.
	Line int
}

// ParseImageList parses a Caffe image list ("path label" per line, the
// label after the last space, as Caffe's ImageDataLayer and
// convert_imageset read it). Blank lines are skipped; errors name the file
// and line.
func ParseImageList(name string, r *bufio.Reader) ([]ListEntry, error) {
	var out []ListEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), " \t\r")
		if strings.TrimSpace(s) == "" {
			continue
		}
		i := strings.LastIndexAny(s, " \t")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: want \"path label\", found %q", name, line, s)
		}
		p := strings.TrimRight(s[:i], " \t")
		l, err := strconv.Atoi(s[i+1:])
		if err != nil || p == "" {
			return nil, fmt.Errorf("%s:%d: want \"path label\" with an integer label, found %q", name, line, s)
		}
		if l < 0 {
			return nil, fmt.Errorf("%s:%d: label %d is negative", name, line, l)
		}
		out = append(out, ListEntry{Path: p, Label: l, Line: line})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	return out, nil
}

// ReadImageList reads the images a Caffe list file names (ImageData's
// source), each path joined to root (Caffe prefixes root_folder as is, so
// give it a trailing slash), into an encoded Dataset decoded with dec.
// Every image must decode; the first gives the shape, and every other must
// have it unless dec resizes.
func ReadImageList(list, root string, dec Decoding) (*Dataset, error) {
	f, err := os.Open(list)
	if err != nil {
		return nil, fmt.Errorf("image list: %w", err)
	}
	defer f.Close()
	entries, err := ParseImageList(list, bufio.NewReader(f))
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("image list %s names no images", list)
	}
	d := &Dataset{Name: list, N: len(entries), Decoding: dec}
	maxL := 0
	for _, e := range entries {
		if e.Label > MaxLabel {
			return nil, fmt.Errorf("%s:%d: label %d is outside 0..%d, the class labels a float32 label blob holds exactly", list, e.Line, e.Label, MaxLabel)
		}
		p := root + e.Path
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", list, e.Line, err)
		}
		key := fmt.Sprintf("%s:%d (%s)", list, e.Line, p)
		if d.Encoded == nil {
			_, c, h, w, err := DecodeImage(b, dec.Channels, dec.Height, dec.Width)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", key, err)
			}
			d.C, d.H, d.W = c, h, w
		}
		d.Encoded = append(d.Encoded, b)
		d.Keys = append(d.Keys, key)
		d.Labels = append(d.Labels, int32(e.Label))
		maxL = max(maxL, e.Label)
	}
	d.Classes = maxL + 1
	return d, nil
}

// listLines reads a list of file names, one a line (HDF5Data's source),
// relative names as written.
func listLines(list string) ([]string, error) {
	b, err := os.ReadFile(list)
	if err != nil {
		return nil, fmt.Errorf("list file: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("list file %s names no files", list)
	}
	return out, nil
}
