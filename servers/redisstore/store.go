package redisstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"
)

// ErrWrongSize is wrapped by the error GetFloats returns when the stored
// value does not hold exactly len(dst) float32s.
var ErrWrongSize = errors.New("redisstore: stored value has the wrong size")

// Store keeps float32 vectors (weights, deltas) in Redis under string
// keys, as little-endian float32 bytes: a vector of n floats is a Redis
// string of 4n bytes. It satisfies the parameter server's weight-store
// interface (PutFloats, GetFloats). It is safe for concurrent use, as
// safe as the Client under it.
//
// On little-endian hosts both calls move the floats between the slice
// and the socket with no intermediate copy, and neither allocates in
// steady state (with a context that cannot be cancelled; a cancellable
// one costs a small allocation per call to watch it).
type Store struct {
	c     *Client
	owned bool // Close closes c
}

// NewStore returns a Store over c. Closing the Store does not close c.
func NewStore(c *Client) *Store { return &Store{c: c} }

// Open dials rawURL (see Dial) and returns a Store that owns the client:
// Close closes it.
func Open(ctx context.Context, rawURL string, cfg Config) (*Store, error) {
	c, err := Dial(ctx, rawURL, cfg)
	if err != nil {
		return nil, err
	}
	return &Store{c: c, owned: true}, nil
}

// Client returns the client the store talks through.
func (s *Store) Client() *Client { return s.c }

// Close closes the client if the store owns it (Open), and does nothing
// otherwise (NewStore).
func (s *Store) Close() error {
	if s.owned {
		return s.c.Close()
	}
	return nil
}

// PutFloats stores v under key, replacing any previous value. v is not
// retained.
func (s *Store) PutFloats(ctx context.Context, key string, v []float32) error {
	cn, err := s.c.get(ctx)
	if err != nil {
		return err
	}
	err = cn.set(ctx, key, nil, v)
	s.c.put(cn)
	return err
}

// GetFloats reads the vector stored under key into dst. It fails with an
// error wrapping ErrNotFound if the key does not exist, and with one
// wrapping ErrWrongSize, naming the key and both sizes, if the value is
// not exactly 4*len(dst) bytes; dst is then left unchanged. After any
// other error (network, timeout, cancellation) dst may hold part of the
// value.
func (s *Store) GetFloats(ctx context.Context, key string, dst []float32) error {
	cn, err := s.c.get(ctx)
	if err != nil {
		return err
	}
	err = cn.getFloats(ctx, key, dst, nativeLittleEndian())
	s.c.put(cn)
	return err
}

// nativeLittleEndian reports whether float32s in memory are already in
// the store's byte order.
func nativeLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// floatBytes views f as its bytes in memory, without copying.
func floatBytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// set runs SET key value, where value is b, or the floats f when b is nil.
func (cn *conn) set(ctx context.Context, key string, b []byte, f []float32) error {
	stop, err := cn.begin(ctx)
	if err != nil {
		return fmt.Errorf("redisstore: redis %s: SET: %w", cn.addr, err)
	}
	err = cn.setRoundTrip(key, b, f, nativeLittleEndian())
	return cn.finish(ctx, stop, "SET", err)
}

func (cn *conn) setRoundTrip(key string, b []byte, f []float32, native bool) error {
	n := len(b)
	if b == nil {
		n = 4 * len(f)
	}
	h := appendArrayHeader(cn.hdr[:0], 3)
	h = appendBulkString(h, "SET")
	h = appendBulkString(h, key)
	h = appendBulkHeader(h, n)
	cn.hdr = h[:0]
	if _, err := cn.bw.Write(h); err != nil {
		return err
	}
	var err error
	switch {
	case b != nil:
		_, err = cn.bw.Write(b)
	case native:
		_, err = cn.bw.Write(floatBytes(f))
	default:
		err = cn.writeFloatsPortable(f)
	}
	if err != nil {
		return err
	}
	if _, err := cn.bw.WriteString("\r\n"); err != nil {
		return err
	}
	if err := cn.bw.Flush(); err != nil {
		return err
	}
	line, err := readLine(cn.br)
	if err != nil {
		return err
	}
	switch {
	case string(line) == "+OK":
		return nil
	case len(line) > 0 && line[0] == '-':
		return &ServerError{Addr: cn.addr, Cmd: "SET", Msg: string(line[1:])}
	}
	cn.broken = true // whatever this is, the rest of it is still unread
	return fmt.Errorf("%w: SET answered %q, want +OK", ErrProtocol, truncate(line))
}

// writeFloatsPortable encodes f little-endian through the connection's
// scratch buffer, for hosts whose memory order differs.
func (cn *conn) writeFloatsPortable(f []float32) error {
	if cn.scratch == nil {
		cn.scratch = make([]byte, bufSize)
	}
	for len(f) > 0 {
		k := min(len(f), len(cn.scratch)/4)
		for i, x := range f[:k] {
			binary.LittleEndian.PutUint32(cn.scratch[4*i:], math.Float32bits(x))
		}
		if _, err := cn.bw.Write(cn.scratch[:4*k]); err != nil {
			return err
		}
		f = f[k:]
	}
	return nil
}

// getFloats runs GET key and decodes the value into dst.
func (cn *conn) getFloats(ctx context.Context, key string, dst []float32, native bool) error {
	stop, err := cn.begin(ctx)
	if err != nil {
		return fmt.Errorf("redisstore: redis %s: GET: %w", cn.addr, err)
	}
	err = cn.getRoundTrip(key, dst, native)
	return cn.finish(ctx, stop, "GET", err)
}

func (cn *conn) getRoundTrip(key string, dst []float32, native bool) error {
	h := appendArrayHeader(cn.hdr[:0], 2)
	h = appendBulkString(h, "GET")
	h = appendBulkString(h, key)
	cn.hdr = h[:0]
	if _, err := cn.bw.Write(h); err != nil {
		return err
	}
	if err := cn.bw.Flush(); err != nil {
		return err
	}
	return cn.readFloatsReply(key, dst, native)
}

// readFloatsReply reads the reply to GET key into dst. On a size
// mismatch it skips the value, keeping the stream in step, when the value
// is within MaxValue, and marks the connection broken otherwise.
func (cn *conn) readFloatsReply(key string, dst []float32, native bool) error {
	line, err := readLine(cn.br)
	if err != nil {
		return err
	}
	if len(line) > 0 && line[0] == '-' {
		return &ServerError{Addr: cn.addr, Cmd: "GET", Msg: string(line[1:])}
	}
	if len(line) == 0 || line[0] != '$' {
		cn.broken = true
		return fmt.Errorf("%w: GET answered %q, want a bulk string", ErrProtocol, truncate(line))
	}
	n, err := parseInt(line[1:])
	if err != nil {
		return err
	}
	want := 4 * int64(len(dst))
	switch {
	case n == -1:
		return fmt.Errorf("redisstore: redis %s: GetFloats %q: %w", cn.addr, key, ErrNotFound)
	case n < 0:
		return fmt.Errorf("%w: bulk length %d", ErrProtocol, n)
	case n != want:
		err := fmt.Errorf("redisstore: redis %s: GetFloats %q: %w: stored value is %d bytes (%s), want %d float32s (%d bytes)",
			cn.addr, key, ErrWrongSize, n, floatCount(n), len(dst), want)
		if n > cn.rr.max {
			cn.broken = true
			return err
		}
		if _, derr := cn.br.Discard(int(n)); derr != nil {
			return noEOF(derr)
		}
		if derr := readCRLF(cn.br); derr != nil {
			return derr
		}
		return err
	}
	if native {
		if _, err := io.ReadFull(cn.br, floatBytes(dst)); err != nil {
			return noEOF(err)
		}
	} else if err := readFloatsPortable(cn.br, dst); err != nil {
		return err
	}
	return readCRLF(cn.br)
}

// readFloatsPortable decodes little-endian float32s into dst straight
// from the reader's buffer.
func readFloatsPortable(br *bufio.Reader, dst []float32) error {
	for len(dst) > 0 {
		k := min(len(dst), br.Size()/4)
		p, err := br.Peek(4 * k)
		if err != nil {
			return noEOF(err)
		}
		for i := range dst[:k] {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		}
		br.Discard(4 * k)
		dst = dst[k:]
	}
	return nil
}

// floatCount describes a byte length as a float32 count.
func floatCount(n int64) string {
	if n%4 != 0 {
		return "not a whole number of float32s"
	}
	return fmt.Sprintf("%d float32s", n/4)
}

// truncate shortens a reply line for an error message.
func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
