package data

import (
	"os"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
)

// WriteMean writes a mean image (ComputeImageMean's) to path as Caffe's
// .binaryproto mean file, through a temporary file in the same directory,
// so a failure leaves no half-written file.
func WriteMean(path string, bp *caffepb.BlobProto) error {
	raw, err := proto.Marshal(bp)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, raw)
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory, so a failure leaves no half-written file.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(dirOf(path), ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[:i+1]
		}
	}
	return "."
}
