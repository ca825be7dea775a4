package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"
	"unsafe"

	"dsgd/comm/netguard"
	"dsgd/comm/wire"
)

// Version is this package's protocol version, sent in the Hello that opens
// every connection; a server refuses a client with another version.
const Version = 1

// NumInts and NumFloats are the numbers of integer and float64 fields of
// a Request and a Response.
const (
	NumInts   = 4
	NumFloats = 2
)

// MaxText is the longest Text a message may carry, in bytes.
const MaxText = wire.MaxString

// Defaults of Config.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxFrame = 256 << 20
)

// ErrRefused is wrapped by Dial's error when the server refuses the hello
// (a wrong token or protocol version).
var ErrRefused = errors.New("connection refused by server")

// Config configures both ends of a connection.
type Config struct {
	// Token is the shared secret a client presents and a server demands.
	// It keeps strangers and other jobs out; it is not cryptography.
	Token string
	// Timeout bounds every read and write: the rest of a frame once its
	// first byte has come, a whole frame sent, the hello, and a client's
	// wait for an answer or a keep-alive. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxFrame is the largest frame payload accepted or sent, in bytes.
	// Zero means DefaultMaxFrame.
	MaxFrame int
	// IdleTimeout, on a server, is how long a connection may wait between
	// two requests before the server closes it (a worker calls its center
	// at least once an iteration). Zero means 10 × Timeout.
	IdleTimeout time.Duration
	// MaxPending, on a server, is how many accepted connections may wait
	// to authenticate at once; past it the oldest is closed. Zero means
	// netguard.DefaultPending.
	MaxPending int
	// ErrorLog, when set on a server, receives every error that closed a
	// connection (each names the peer's address). It is called from the
	// connection goroutines, concurrently. Nil discards them.
	ErrorLog func(error)
}

func (c Config) withDefaults() (Config, error) {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.Timeout < 0 || c.IdleTimeout < 0 {
		return c, fmt.Errorf("rpc: negative timeout %v or idle timeout %v", c.Timeout, c.IdleTimeout)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 10 * c.Timeout
	}
	if c.MaxFrame < fixedSize {
		return c, fmt.Errorf("rpc: max frame %d bytes is below the %d-byte message minimum", c.MaxFrame, fixedSize)
	}
	if len(c.Token) > wire.MaxToken {
		return c, fmt.Errorf("rpc: token of %d bytes, limit %d", len(c.Token), wire.MaxToken)
	}
	if c.MaxPending < 0 {
		return c, fmt.Errorf("rpc: negative MaxPending %d", c.MaxPending)
	}
	if c.MaxPending == 0 {
		c.MaxPending = netguard.DefaultPending
	}
	return c, nil
}

// Request is one call. Op is the operation; the meaning of the other
// fields is the caller's and the handler's.
//
// On the server, Text and Data are valid only until the handler returns:
// Data lies in the connection's receive buffer.
type Request struct {
	Op     uint32
	Ints   [NumInts]int64
	Floats [NumFloats]float64
	Text   string
	Data   []float32

	buf []float32 // server: the connection's receive buffer
}

// Response is a call's answer.
//
// On the server the handler fills it; a Response is reused for every call
// of a connection and reset (fields zeroed, Data nil) before each. Data
// may point at memory the handler owns, at req.Data, or at Buffer's slice,
// and must stay untouched until the handler returns (it is sent after).
//
// On the client, Call reads the payload into Data's backing array when
// cap(Data) is enough for it, else into a new slice, and sets Data to the
// payload's length.
type Response struct {
	Ints   [NumInts]int64
	Floats [NumFloats]float64
	Text   string
	Data   []float32

	buf []float32 // server: Buffer's storage
}

// Buffer returns a slice of n float32s owned by the Response's connection
// and reused from call to call, for a handler to fill and set as Data. It
// does not set Data itself. Its contents are unspecified.
func (r *Response) Buffer(n int) []float32 {
	if cap(r.buf) < n {
		r.buf = make([]float32, n)
	}
	return r.buf[:n]
}

// RemoteError is an error the server's handler returned, as the client
// sees it.
type RemoteError struct {
	Addr string // the server's address
	Op   uint32
	Msg  string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("rpc: server %s, op %d: %s", e.Addr, e.Op, e.Msg)
}

// The status byte of a message body.
const (
	statusRequest = 0
	statusOK      = 1
	statusError   = 2
	statusPending = 3 // keep-alive: the handler is still running
)

// fixedSize is the size of a message body's fixed part.
//
// Body layout (little-endian): status [0], zero [1:4], text length
// [4:8], Ints [8:40], Floats as IEEE bits [40:56], then the text, then
// the float32 payload (the rest of the frame).
const fixedSize = 8 + 8*NumInts + 8*NumFloats

// message is the decoded form shared by requests and responses.
type message struct {
	op     uint32
	status byte
	ints   [NumInts]int64
	floats [NumFloats]float64
	text   string
	data   []float32
}

// appendHead appends the frame header, the fixed part and the text of m
// to dst; the payload (4*len(m.data) bytes) must follow.
func appendHead(dst []byte, m *message, seq uint64) []byte {
	n := uint64(fixedSize + len(m.text) + 4*len(m.data))
	dst = wire.AppendHeader(dst, wire.Header{Kind: wire.KindBytes, Tag: m.op, Len: n, Seq: seq})
	dst = append(dst, m.status, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(m.text)))
	for _, v := range m.ints {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
	}
	for _, v := range m.floats {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return append(dst, m.text...)
}

// frameSize is the payload size of m's frame in bytes.
func frameSize(m *message) int { return fixedSize + len(m.text) + 4*len(m.data) }

// smallPayload is the payload size below which the payload is copied into
// the head buffer and sent in one write.
const smallPayload = 16 << 10

// writeMessage sends m as one frame through w, using *buf as scratch.
func writeMessage(w io.Writer, m *message, seq uint64, buf *[]byte) error {
	b := appendHead((*buf)[:0], m, seq)
	small := 4*len(m.data) <= smallPayload
	if small {
		b = appendFloats(b, m.data)
	}
	*buf = b
	if _, err := w.Write(b); err != nil {
		return err
	}
	if small || len(m.data) == 0 {
		return nil
	}
	if littleEndian {
		_, err := w.Write(floatBytes(m.data))
		return err
	}
	for d := m.data; len(d) > 0; {
		k := min(len(d), smallPayload/4)
		*buf = appendFloats((*buf)[:0], d[:k])
		if _, err := w.Write(*buf); err != nil {
			return err
		}
		d = d[k:]
	}
	return nil
}

func appendFloats(dst []byte, f []float32) []byte {
	if littleEndian {
		return append(dst, floatBytes(f)...)
	}
	for _, v := range f {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

// reader reads messages from one direction of a connection.
type reader struct {
	r        io.Reader
	maxFrame int
	seq      uint64 // the next expected sequence number
	head     [wire.HeaderSize + fixedSize]byte
	text     []byte
	scratch  []byte // big-endian hosts only
}

// readHead reads a frame header and the fixed part of its body into m,
// then the text; it returns the number of payload floats still to read.
// before, if not nil, is called once the first byte has arrived (to arm
// the deadline for the rest).
func (r *reader) readHead(m *message, before func()) (int, error) {
	if before != nil {
		if _, err := io.ReadFull(r.r, r.head[:1]); err != nil {
			return 0, err
		}
		before()
		if _, err := io.ReadFull(r.r, r.head[1:wire.HeaderSize]); err != nil {
			return 0, unexpected(err)
		}
	} else if _, err := io.ReadFull(r.r, r.head[:wire.HeaderSize]); err != nil {
		return 0, err
	}
	h, err := wire.ParseHeader(r.head[:wire.HeaderSize], uint64(r.maxFrame))
	if err != nil {
		return 0, err
	}
	if h.Kind != wire.KindBytes {
		return 0, fmt.Errorf("%w: %s frame where a message was expected", wire.ErrMalformed, h.Kind)
	}
	if h.Seq != r.seq {
		return 0, fmt.Errorf("%w: frame number %d, expected %d (the stream lost its framing)", wire.ErrMalformed, h.Seq, r.seq)
	}
	if h.Len < fixedSize {
		return 0, fmt.Errorf("%w: message of %d bytes, shorter than its %d-byte fixed part", wire.ErrMalformed, h.Len, fixedSize)
	}
	fix := r.head[wire.HeaderSize:]
	if _, err := io.ReadFull(r.r, fix); err != nil {
		return 0, unexpected(err)
	}
	r.seq++
	m.op = h.Tag
	m.status = fix[0]
	if m.status > statusPending || fix[1]|fix[2]|fix[3] != 0 {
		return 0, fmt.Errorf("%w: bad status bytes % x", wire.ErrMalformed, fix[0:4])
	}
	tl := uint64(binary.LittleEndian.Uint32(fix[4:8]))
	if tl > MaxText || tl > h.Len-fixedSize {
		return 0, fmt.Errorf("%w: text of %d bytes in a %d-byte message (limit %d)", wire.ErrMalformed, tl, h.Len, MaxText)
	}
	rest := h.Len - fixedSize - tl
	if rest%4 != 0 {
		return 0, fmt.Errorf("%w: payload of %d bytes is not a whole number of float32s", wire.ErrMalformed, rest)
	}
	for i := range m.ints {
		m.ints[i] = int64(binary.LittleEndian.Uint64(fix[8+8*i:]))
	}
	for i := range m.floats {
		m.floats[i] = math.Float64frombits(binary.LittleEndian.Uint64(fix[8+8*NumInts+8*i:]))
	}
	if tl == 0 {
		m.text = ""
	} else {
		if cap(r.text) < int(tl) {
			r.text = make([]byte, tl)
		}
		t := r.text[:tl]
		if _, err := io.ReadFull(r.r, t); err != nil {
			return 0, unexpected(err)
		}
		// Reuse the previous string when the text repeats (a key), so
		// steady-state calls do not allocate.
		if string(t) != m.text {
			m.text = string(t)
		}
	}
	return int(rest / 4), nil
}

// readFloats reads len(dst) payload floats into dst.
func (r *reader) readFloats(dst []float32) error {
	if littleEndian {
		_, err := io.ReadFull(r.r, floatBytes(dst))
		return unexpected(err)
	}
	if r.scratch == nil {
		r.scratch = make([]byte, smallPayload)
	}
	for len(dst) > 0 {
		k := min(len(dst), len(r.scratch)/4)
		b := r.scratch[:4*k]
		if _, err := io.ReadFull(r.r, b); err != nil {
			return unexpected(err)
		}
		for i := range k {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		dst = dst[k:]
	}
	return nil
}

// unexpected turns an EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// grow returns b resized to n, reusing its backing array when it fits.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func floatBytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// writeControl sends m as a control frame with sequence number seq.
func writeControl(c net.Conn, m wire.Control, seq uint64, deadline time.Time) error {
	b, err := m.AppendBinary(make([]byte, wire.HeaderSize, 128))
	if err != nil {
		return err
	}
	wire.PutHeader(b, wire.Header{Kind: wire.KindControl, Len: uint64(len(b) - wire.HeaderSize), Seq: seq})
	c.SetWriteDeadline(deadline)
	_, err = c.Write(b)
	return err
}

// maxControl bounds the frame of a server's answer to the hello.
const maxControl = 4 * wire.MaxString

// readControl reads one control frame with sequence number seq and a
// payload of at most limit bytes.
func readControl(c net.Conn, seq uint64, deadline time.Time, limit uint64) (wire.Control, error) {
	c.SetReadDeadline(deadline)
	var hdr [wire.HeaderSize]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return nil, err
	}
	h, err := wire.ParseHeader(hdr[:], limit)
	if err != nil {
		return nil, err
	}
	if h.Kind != wire.KindControl || h.Seq != seq {
		return nil, fmt.Errorf("%w: %s frame number %d during the hello", wire.ErrMalformed, h.Kind, h.Seq)
	}
	b := make([]byte, h.Len)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, unexpected(err)
	}
	return wire.DecodeControl(b)
}
