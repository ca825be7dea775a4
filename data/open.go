package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultRoot is where built-in data set names are looked up: Debian's
// dataset-fashion-mnist package installs /usr/share/datasets/fashion-mnist.
const DefaultRoot = "/usr/share/datasets"

// Standard file names.
const (
	cifarSubdir = "cifar-10-batches-bin"
	cifarTest   = "test_batch.bin"
	lmdbFile    = "data.mdb"
)

// idxNames returns the images and labels file names of a split, without
// the optional .gz.
func idxNames(split Split) (images, labels string) {
	if split == Test {
		return "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"
	}
	return "train-images-idx3-ubyte", "train-labels-idx1-ubyte"
}

func cifarTrainName(i int) string { return fmt.Sprintf("data_batch_%d.bin", i) }

// What a data directory must hold, for errors.
const wantFiles = "MNIST-style IDX files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], " +
	"t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]) or CIFAR-10 binary batches " +
	"(data_batch_1.bin … data_batch_5.bin and test_batch.bin, directly or in " + cifarSubdir + "/)"

// Opener opens data sets by spec. The zero value looks built-in names up
// under DefaultRoot; tests set Root to a temporary directory.
type Opener struct {
	// Root is the directory that holds built-in data sets; "" means
	// DefaultRoot.
	Root string
}

// Open opens a data set with the zero Opener; see Opener.Open.
func Open(spec string, split Split) (*Dataset, error) {
	return Opener{}.Open(spec, split)
}

// Open loads one split of the data set that spec names:
//
//   - "fashion-mnist" or "mnist": the IDX files in Root/<name>;
//   - "cifar10": the CIFAR-10 binary batches in Root/cifar10;
//   - "synthetic" or "synthetic:KEY=VALUE,...": see ParseSynthetic;
//   - anything else: a directory holding IDX files (gzipped or not) under
//     their standard names, or CIFAR-10 batches, possibly in a
//     cifar-10-batches-bin subdirectory.
//
// Errors say which path is wrong and what to do about it.
func (o Opener) Open(spec string, split Split) (*Dataset, error) {
	if split != Train && split != Test {
		return nil, fmt.Errorf("data set %q: bad split %v", spec, split)
	}
	root := o.Root
	if root == "" {
		root = DefaultRoot
	}
	switch {
	case spec == "":
		return nil, errors.New("no data set given: pass --data with fashion-mnist, mnist, cifar10, synthetic[:KEY=VALUE,...] or a directory")
	case spec == "synthetic" || strings.HasPrefix(spec, "synthetic:"):
		cfg, err := ParseSynthetic(spec)
		if err != nil {
			return nil, err
		}
		cfg.Split = split
		return Synthetic(cfg)
	case spec == "fashion-mnist" || spec == "mnist" || spec == "cifar10":
		dir := filepath.Join(root, spec)
		if _, err := os.Stat(dir); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("data set %s: %s does not exist: %s", spec, dir, builtinHint(spec))
			}
			return nil, fmt.Errorf("data set %s: %w", spec, err)
		}
		return openDir(dir, spec, split)
	}
	st, err := os.Stat(spec)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("data set %s does not exist: --data takes a built-in name (fashion-mnist, mnist, cifar10, synthetic) or a directory holding %s", spec, wantFiles)
	case err != nil:
		return nil, fmt.Errorf("data set: %w", err)
	case !st.IsDir() && filepath.Base(spec) == lmdbFile:
		return nil, lmdbError(filepath.Dir(spec))
	case !st.IsDir():
		return nil, fmt.Errorf("data set %s is a file: point --data at the directory holding %s", spec, wantFiles)
	}
	return openDir(spec, filepath.Base(filepath.Clean(spec)), split)
}

// builtinHint says how to get a missing built-in data set.
func builtinHint(name string) string {
	switch name {
	case "fashion-mnist":
		return "install it with `apt-get install dataset-fashion-mnist`, or pass --data DIR with a directory holding the Fashion-MNIST IDX files (train-images-idx3-ubyte.gz and the rest)"
	case "mnist":
		return "pass --data DIR with a directory holding the MNIST IDX files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz])"
	}
	return "download the CIFAR-10 binary version and pass --data DIR with a directory holding data_batch_1.bin … data_batch_5.bin and test_batch.bin (or the cifar-10-batches-bin directory itself)"
}

func lmdbError(dir string) error {
	return fmt.Errorf("data set %s is a Caffe LMDB database (%s): read it with OpenSource or ReadDB (a Data layer with backend: LMDB), not as a directory of %s", dir, lmdbFile, wantFiles)
}

// exists reports whether path names an existing regular file.
func exists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// findIDX returns dir/name or dir/name.gz, whichever exists, or "".
func findIDX(dir, name string) string {
	for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, name+".gz")} {
		if exists(p) {
			return p
		}
	}
	return ""
}

// openDir loads a split from a directory of IDX or CIFAR-10 files.
func openDir(dir, name string, split Split) (*Dataset, error) {
	if exists(filepath.Join(dir, lmdbFile)) {
		return nil, lmdbError(dir)
	}
	d, err := openIDXDir(dir, split)
	if d == nil && err == nil {
		d, err = openCIFARDir(dir, split)
	}
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("data set %s: no data set found: want %s", dir, wantFiles)
	}
	d.Name = name + "/" + split.String()
	return d, nil
}

// openIDXDir loads a split of IDX files; (nil, nil) if dir holds none.
func openIDXDir(dir string, split Split) (*Dataset, error) {
	trImg, trLab := idxNames(Train)
	teImg, teLab := idxNames(Test)
	found := false
	for _, n := range []string{trImg, trLab, teImg, teLab} {
		if findIDX(dir, n) != "" {
			found = true
		}
	}
	if !found {
		return nil, nil
	}
	imgName, labName := idxNames(split)
	img, lab := findIDX(dir, imgName), findIDX(dir, labName)
	for _, m := range []struct{ path, name string }{{img, imgName}, {lab, labName}} {
		if m.path == "" {
			return nil, fmt.Errorf("data set %s: missing %s (or %s.gz) for the %s split", dir, m.name, m.name, split)
		}
	}
	return ReadIDXFiles(img, lab)
}

// openCIFARDir loads a split of CIFAR-10 batches; (nil, nil) if dir holds
// none.
func openCIFARDir(dir string, split Split) (*Dataset, error) {
	base := ""
	for _, d := range []string{dir, filepath.Join(dir, cifarSubdir)} {
		if exists(filepath.Join(d, cifarTrainName(1))) || exists(filepath.Join(d, cifarTest)) {
			base = d
			break
		}
	}
	if base == "" {
		return nil, nil
	}
	var names []string
	if split == Test {
		names = []string{cifarTest}
	} else {
		for i := 1; i <= cifarTrainFiles; i++ {
			names = append(names, cifarTrainName(i))
		}
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(base, n)
		if !exists(paths[i]) {
			return nil, fmt.Errorf("data set %s: missing %s for the %s split (CIFAR-10 wants data_batch_1.bin … data_batch_5.bin and test_batch.bin)", base, n, split)
		}
	}
	return ReadCIFARFiles(paths...)
}
