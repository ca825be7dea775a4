package main

import (
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/data"
)

// fashionSubset writes the first train and test items of the installed
// Fashion-MNIST, as uncompressed IDX files, into dir/fashion, and returns
// fashionNet reading them (source "fashion", relative to dir); it skips
// the test when Fashion-MNIST is not installed. The tests that use it
// train 30 iterations of a global batch of 64, under 2,048 images, and
// compare runs on the same images, so the first 2,048 serve as the
// 60,000 did; but each run, each process, loads only those: the whole
// set took about 7 s to gunzip per load under the race detector (0.8 s
// without), which made cmd/dsgd's race pass a few minutes longer.
func fashionSubset(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(data.DefaultRoot, "fashion-mnist")
	out := filepath.Join(dir, "fashion")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name       string
		magic      uint32
		n, perItem int
	}{
		{"train-images-idx3-ubyte", 0x803, 2048, 28 * 28},
		{"train-labels-idx1-ubyte", 0x801, 2048, 1},
		{"t10k-images-idx3-ubyte", 0x803, 500, 28 * 28},
		{"t10k-labels-idx1-ubyte", 0x801, 500, 1},
	} {
		if err := idxPrefix(filepath.Join(src, f.name+".gz"), filepath.Join(out, f.name), f.magic, f.n, f.perItem); err != nil {
			if os.IsNotExist(err) {
				t.Skipf("Fashion-MNIST is not installed (Debian dataset-fashion-mnist; make installs it): %v", err)
			}
			t.Fatal(err)
		}
	}
	return strings.ReplaceAll(fashionNet, `source: "fashion-mnist"`, `source: "fashion"`)
}

// idxPrefix writes the first n items of the gzipped IDX file src to dst,
// uncompressed, decompressing only those.
func idxPrefix(src, dst string, magic uint32, n, perItem int) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %v", src, err)
	}
	dims := 1
	if magic == 0x803 {
		dims = 3
	}
	head := make([]byte, 4+4*dims)
	if _, err := io.ReadFull(zr, head); err != nil {
		return fmt.Errorf("%s: %v", src, err)
	}
	if got := binary.BigEndian.Uint32(head); got != magic || int(binary.BigEndian.Uint32(head[4:])) < n {
		return fmt.Errorf("%s: magic %#x, %d items; want %#x and at least %d", src, got, binary.BigEndian.Uint32(head[4:]), magic, n)
	}
	binary.BigEndian.PutUint32(head[4:], uint32(n))
	body := make([]byte, n*perItem)
	if _, err := io.ReadFull(zr, body); err != nil {
		return fmt.Errorf("%s: %v", src, err)
	}
	return os.WriteFile(dst, append(head, body...), 0o644)
}
