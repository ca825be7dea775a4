//go:build purego

package data

import "errors"

// libjpegDecodes is false in the pure-Go build: Go's image/jpeg decodes,
// whose pixels differ from libjpeg's (and Caffe's) by a few levels.
const libjpegDecodes = false

var errNotLibjpeg = errors.New("no libjpeg in the pure-Go build")

// decodeJPEG leaves every JPEG to Go's decoder in the pure-Go build.
func decodeJPEG([]byte, int) ([]uint8, int, int, int, error) {
	return nil, 0, 0, 0, errNotLibjpeg
}
