//go:build !purego

package data

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/data/db"
)

// cifarDir writes a small CIFAR-10 binary set: data_batch_1..5.bin of 2,
// 3, 1, 2 and 2 records and test_batch.bin of 3, random labels and
// pixels. It returns the folder and every file's records, in order.
func cifarDir(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cifar")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	files := map[string][]byte{}
	for i, n := range []int{2, 3, 1, 2, 2, 3} {
		name := fmt.Sprintf("data_batch_%d.bin", i+1)
		if i == 5 {
			name = "test_batch.bin"
		}
		b := make([]byte, n*cifarRecord)
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		for k := range n {
			b[k*cifarRecord] = byte(r.IntN(10))
		}
		files[name] = b
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// TestConvertCIFAR: convert_cifar_data's two databases, read back record
// by record against the batch files' bytes (keys %05d by index, raw
// 3×32×32 Datums, the label byte); an existing output or a bad batch is
// refused naming it, and a failed run leaves no database.
func TestConvertCIFAR(t *testing.T) {
	in, files := cifarDir(t)
	for _, b := range []db.Backend{db.LMDB, db.LevelDB} {
		out := t.TempDir()
		train, test, err := ConvertCIFAR(in, out, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if train.Records != 10 || test.Records != 3 {
			t.Fatalf("%s: %d training and %d test records, want 10 and 3", b, train.Records, test.Records)
		}
		var trainRecs []byte
		for i := 1; i <= 5; i++ {
			trainRecs = append(trainRecs, files[fmt.Sprintf("data_batch_%d.bin", i)]...)
		}
		for split, want := range map[string][]byte{"train": trainRecs, "test": files["test_batch.bin"]} {
			d, err := db.Open(filepath.Join(out, "cifar10_"+split+"_"+b.String()), b)
			if err != nil {
				t.Fatal(err)
			}
			c, err := d.Cursor()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for k, v, ok, err := c.First(); ok || err != nil; k, v, ok, err = c.Next() {
				if err != nil {
					t.Fatal(err)
				}
				rec := want[n*cifarRecord : (n+1)*cifarRecord]
				var dt caffepb.Datum
				if err := proto.Unmarshal(v, &dt); err != nil {
					t.Fatal(err)
				}
				if string(k) != fmt.Sprintf("%05d", n) || dt.GetChannels() != 3 || dt.GetHeight() != 32 || dt.GetWidth() != 32 ||
					dt.GetLabel() != int32(rec[0]) || string(dt.GetData()) != string(rec[1:]) || dt.GetEncoded() {
					t.Fatalf("%s %s record %d: key %q, %dx%dx%d label %d: not the batch file's record", b, split, n, k, dt.GetChannels(), dt.GetHeight(), dt.GetWidth(), dt.GetLabel())
				}
				n++
			}
			c.Close()
			d.Close()
			if n*cifarRecord != len(want) {
				t.Errorf("%s %s: %d records, want %d", b, split, n, len(want)/cifarRecord)
			}
		}
		if _, _, err := ConvertCIFAR(in, out, b, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Errorf("%s: converting into existing databases: %v", b, err)
		}
	}

	// A truncated test batch stops the run before it writes, naming the
	// file; a missing training batch too.
	bad := filepath.Join(in, "test_batch.bin")
	if err := os.WriteFile(bad, files["test_batch.bin"][:100], 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, _, err := ConvertCIFAR(in, out, db.LMDB, nil); err == nil || !strings.Contains(err.Error(), bad+": truncated") {
		t.Errorf("a truncated test batch: %v", err)
	}
	os.Remove(filepath.Join(in, "data_batch_3.bin"))
	if _, _, err := ConvertCIFAR(in, out, db.LMDB, nil); err == nil || !strings.Contains(err.Error(), "data_batch_3.bin") {
		t.Errorf("a missing training batch: %v", err)
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Errorf("failed conversions left %d entries in the output folder", len(left))
	}
}
