package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Version is the protocol version this package speaks. It is carried in
// every frame header and in Hello; peers with another version are refused.
const Version = 1

// HeaderSize is the size in bytes of an encoded Header.
const HeaderSize = 24

// magic opens every frame: "dg".
const magic0, magic1 = 'd', 'g'

// Kind says what a frame's payload holds.
type Kind uint8

// The frame kinds. The zero Kind is invalid so that a zeroed header is
// rejected.
const (
	// KindFloat32 is a vector of little-endian IEEE float32 values.
	KindFloat32 Kind = 1
	// KindFloat16 is a vector of little-endian IEEE half-precision values
	// standing for float32s (fp16 compression).
	KindFloat16 Kind = 2
	// KindBytes is an opaque byte message.
	KindBytes Kind = 3
	// KindControl is a control message (DecodeControl) of the transport
	// itself, such as the rendezvous.
	KindControl Kind = 4
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindFloat32:
		return "float32"
	case KindFloat16:
		return "float16"
	case KindBytes:
		return "bytes"
	case KindControl:
		return "control"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ElemSize is the size in bytes of one payload element: 4 for float32, 2
// for float16 and 1 for the others.
func (k Kind) ElemSize() int {
	switch k {
	case KindFloat32:
		return 4
	case KindFloat16:
		return 2
	}
	return 1
}

// ErrMalformed is wrapped by every error about bytes that are not a valid
// frame header or control message.
var ErrMalformed = errors.New("malformed frame")

// ErrTooLarge is wrapped by the error about a header announcing more
// payload than the reader accepts.
var ErrTooLarge = errors.New("frame too large")

// Header is the fixed-size prefix of every frame.
//
// Layout (little-endian): magic "dg" [0:2], version [2], kind [3],
// tag [4:8], payload length in bytes [8:16], sequence number [16:24].
type Header struct {
	Kind Kind
	// Tag is chosen by the sender's caller; the receiver's caller says
	// which tag it expects.
	Tag uint32
	// Len is the payload length in bytes (not elements).
	Len uint64
	// Seq numbers the frames of one direction of one connection from 0,
	// so a receiver detects a stream that lost its framing.
	Seq uint64
}

// PutHeader encodes h into b[:HeaderSize]. It panics if b is shorter, a
// programmer error.
func PutHeader(b []byte, h Header) {
	if len(b) < HeaderSize {
		panic(fmt.Sprintf("wire: header buffer of %d bytes, need %d", len(b), HeaderSize))
	}
	b[0], b[1], b[2], b[3] = magic0, magic1, Version, byte(h.Kind)
	binary.LittleEndian.PutUint32(b[4:8], h.Tag)
	binary.LittleEndian.PutUint64(b[8:16], h.Len)
	binary.LittleEndian.PutUint64(b[16:24], h.Seq)
}

// AppendHeader appends the encoding of h to dst.
func AppendHeader(dst []byte, h Header) []byte {
	var b [HeaderSize]byte
	PutHeader(b[:], h)
	return append(dst, b[:]...)
}

// ParseHeader decodes and validates the header in b[:HeaderSize]: magic,
// version, a known kind, a length of at most maxLen bytes (error wrapping
// ErrTooLarge) and a whole number of elements for the float kinds. Every
// other problem gives an error wrapping ErrMalformed.
func ParseHeader(b []byte, maxLen uint64) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: header of %d bytes, need %d", ErrMalformed, len(b), HeaderSize)
	}
	if b[0] != magic0 || b[1] != magic1 {
		return Header{}, fmt.Errorf("%w: bad magic 0x%02x%02x (not a dsgd peer, or the stream lost its framing)", ErrMalformed, b[0], b[1])
	}
	if b[2] != Version {
		return Header{}, fmt.Errorf("%w: protocol version %d, this build speaks %d", ErrMalformed, b[2], Version)
	}
	h := Header{
		Kind: Kind(b[3]),
		Tag:  binary.LittleEndian.Uint32(b[4:8]),
		Len:  binary.LittleEndian.Uint64(b[8:16]),
		Seq:  binary.LittleEndian.Uint64(b[16:24]),
	}
	switch h.Kind {
	case KindFloat32, KindFloat16, KindBytes, KindControl:
	default:
		return Header{}, fmt.Errorf("%w: unknown kind %d", ErrMalformed, b[3])
	}
	if h.Len > maxLen {
		return Header{}, fmt.Errorf("%w: %d-byte %s payload announced, limit %d", ErrTooLarge, h.Len, h.Kind, maxLen)
	}
	if es := uint64(h.Kind.ElemSize()); h.Len%es != 0 {
		return Header{}, fmt.Errorf("%w: %s payload of %d bytes is not a whole number of %d-byte values", ErrMalformed, h.Kind, h.Len, es)
	}
	return h, nil
}
