package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxDeflateRatio bounds how much deflate can expand its input (about
// 1032:1), so a file's size bounds what it can decompress to.
const maxDeflateRatio = 1032

// maxSizeHint caps the buffer reserved up front from a gzip trailer; past it
// the buffer grows only as decompressed bytes really arrive.
const maxSizeHint = 1 << 28

// isGzip reports whether b starts with the gzip magic bytes.
func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// maybeGunzip returns b itself, or what it decompresses to when it starts
// with the gzip magic bytes; the file name is not consulted. Memory grows
// with the bytes actually decompressed, never with a size any header claims.
// A stream that ends early is not an error here: cut is set and what was
// decompressed is returned, so the caller can say what is missing.
func maybeGunzip(name string, b []byte) (out []byte, cut bool, err error) {
	if !isGzip(b) {
		return b, false, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%s: corrupt gzip header: %v", name, err)
	}
	limit := int64(len(b))*maxDeflateRatio + 1024
	// The trailer's ISIZE (length mod 2^32 of the last member) is only a
	// hint, capped by what the compressed size allows.
	hint := int64(binary.LittleEndian.Uint32(b[len(b)-4:]))
	hint = min(hint, limit, maxSizeHint)
	buf := make([]byte, 0, max(hint, 512))
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := zr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, false, fmt.Errorf("%s: corrupt gzip data: decompresses to more than %d bytes", name, limit)
		}
		switch {
		case err == io.EOF:
			return buf, false, nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			return buf, true, nil
		case err != nil:
			return nil, false, fmt.Errorf("%s: corrupt gzip data after %d decompressed bytes: %v", name, len(buf), err)
		}
	}
}

// cutError says a gzip stream ended early, after n decompressed bytes.
func cutError(name string, n int) error {
	return fmt.Errorf("%s: truncated: the gzip stream ends early, after %d decompressed bytes", name, n)
}
