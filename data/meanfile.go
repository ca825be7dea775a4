package data

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
	"dsgd/internal/atomicfile"
)

// WriteMean writes a mean image (ComputeImageMean's) to path as Caffe's
// .binaryproto mean file, through a temporary file in the same directory,
// so a failure leaves no half-written file.
func WriteMean(path string, bp *caffepb.BlobProto) error {
	raw, err := proto.Marshal(bp)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, raw, 0o644); err != nil {
		return fmt.Errorf("data: writing %s: %w", path, err)
	}
	return nil
}
