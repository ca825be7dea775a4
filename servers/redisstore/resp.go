package redisstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrProtocol is wrapped by every error about a reply that is not valid
// RESP2: a bad type byte, a malformed length, a missing CRLF.
var ErrProtocol = errors.New("redisstore: malformed RESP reply")

// ErrTooLarge is wrapped by the error for a reply whose strings, in
// total, exceed Config.MaxValue bytes, or that nests or counts more
// elements than the client accepts.
var ErrTooLarge = errors.New("redisstore: reply too large")

const (
	// maxDepth bounds how deeply arrays may nest in one reply.
	maxDepth = 16
	// maxElems bounds how many values (at any depth) one reply may hold.
	maxElems = 1 << 20
)

// Kind is the RESP2 type of a Reply.
type Kind uint8

// The RESP2 reply types. KindNil stands for both the nil bulk string
// ($-1) and the nil array (*-1).
const (
	KindSimple Kind = iota + 1 // +OK
	KindError                  // -ERR ... (only inside arrays; a top-level error is returned as *ServerError)
	KindInt                    // :42
	KindBulk                   // $3 foo
	KindNil                    // $-1 or *-1
	KindArray                  // *2 ...
)

// String returns the name of the kind.
func (k Kind) String() string {
	switch k {
	case KindSimple:
		return "simple"
	case KindError:
		return "error"
	case KindInt:
		return "integer"
	case KindBulk:
		return "bulk"
	case KindNil:
		return "nil"
	case KindArray:
		return "array"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Reply is one decoded RESP2 value.
type Reply struct {
	Kind Kind
	// Str holds the bytes of a simple string, error or bulk string.
	Str []byte
	// Int holds the value of an integer reply.
	Int int64
	// Elems holds the elements of an array.
	Elems []Reply
}

// replyReader decodes RESP2 replies from br, holding each reply to at
// most max bytes of string data and maxElems values.
type replyReader struct {
	br    *bufio.Reader
	max   int64 // bytes of string data one reply may hold
	left  int64 // bytes left to the reply being read
	elems int   // values read so far in the reply being read
}

// read decodes one whole reply. A top-level error reply comes back as a
// Reply of KindError and a nil error; the caller turns it into a
// *ServerError.
func (r *replyReader) read() (Reply, error) {
	r.left, r.elems = r.max, 0
	return r.value(0)
}

func (r *replyReader) value(depth int) (Reply, error) {
	if r.elems++; r.elems > maxElems {
		return Reply{}, fmt.Errorf("%w: more than %d values", ErrTooLarge, maxElems)
	}
	line, err := readLine(r.br)
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, fmt.Errorf("%w: empty line", ErrProtocol)
	}
	body := line[1:]
	switch line[0] {
	case '+', '-':
		if int64(len(body)) > r.left {
			return Reply{}, fmt.Errorf("%w: more than %d bytes of strings", ErrTooLarge, r.max)
		}
		r.left -= int64(len(body))
		k := KindSimple
		if line[0] == '-' {
			k = KindError
		}
		return Reply{Kind: k, Str: bytes.Clone(body)}, nil
	case ':':
		n, err := parseInt(body)
		if err != nil {
			return Reply{}, err
		}
		return Reply{Kind: KindInt, Int: n}, nil
	case '$':
		n, err := parseInt(body)
		if err != nil {
			return Reply{}, err
		}
		switch {
		case n == -1:
			return Reply{Kind: KindNil}, nil
		case n < 0:
			return Reply{}, fmt.Errorf("%w: bulk length %d", ErrProtocol, n)
		case n > r.left:
			return Reply{}, fmt.Errorf("%w: bulk string of %d bytes, limit %d", ErrTooLarge, n, r.max)
		}
		r.left -= n
		// The bound was checked above; the allocation is at most max.
		s := make([]byte, n)
		if _, err := io.ReadFull(r.br, s); err != nil {
			return Reply{}, noEOF(err)
		}
		if err := readCRLF(r.br); err != nil {
			return Reply{}, err
		}
		return Reply{Kind: KindBulk, Str: s}, nil
	case '*':
		n, err := parseInt(body)
		if err != nil {
			return Reply{}, err
		}
		switch {
		case n == -1:
			return Reply{Kind: KindNil}, nil
		case n < 0:
			return Reply{}, fmt.Errorf("%w: array length %d", ErrProtocol, n)
		case n > int64(maxElems-r.elems):
			return Reply{}, fmt.Errorf("%w: array of %d values, limit %d", ErrTooLarge, n, maxElems)
		case depth >= maxDepth:
			return Reply{}, fmt.Errorf("%w: arrays nested deeper than %d", ErrTooLarge, maxDepth)
		}
		// Grow with the values actually read, so a bogus count cannot
		// make us allocate ahead of the input.
		elems := make([]Reply, 0, min(n, 16))
		for range n {
			v, err := r.value(depth + 1)
			if err != nil {
				return Reply{}, err
			}
			elems = append(elems, v)
		}
		return Reply{Kind: KindArray, Elems: elems}, nil
	}
	return Reply{}, fmt.Errorf("%w: unknown type byte %q", ErrProtocol, line[0])
}

// readLine returns the next CRLF-terminated line without its CRLF. The
// slice aliases br's buffer and is valid until the next read.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, br.Size())
	case err != nil:
		return nil, noEOF(err)
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, fmt.Errorf("%w: line not terminated by CRLF", ErrProtocol)
	}
	return line[:len(line)-2], nil
}

// readCRLF consumes the CRLF that ends a bulk string.
func readCRLF(br *bufio.Reader) error {
	cr, err := br.ReadByte()
	if err != nil {
		return noEOF(err)
	}
	lf, err := br.ReadByte()
	if err != nil {
		return noEOF(err)
	}
	if cr != '\r' || lf != '\n' {
		return fmt.Errorf("%w: bulk string not terminated by CRLF", ErrProtocol)
	}
	return nil
}

// noEOF turns a clean EOF in the middle of a reply into
// io.ErrUnexpectedEOF: the server never ends a connection between the
// request and its reply on purpose.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseInt parses a RESP integer as Redis writes it: an optional '-' and
// 1 to 19 decimal digits with no leading zero (0 itself, never -0), so
// that a length is read one way only; without allocating.
func parseInt(b []byte) (int64, error) {
	neg := len(b) > 0 && b[0] == '-'
	d := b
	if neg {
		d = b[1:]
	}
	if len(d) == 0 || len(d) > 19 || d[0] == '0' && (len(d) > 1 || neg) {
		return 0, fmt.Errorf("%w: bad integer %q", ErrProtocol, b)
	}
	var n uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad integer %q", ErrProtocol, b)
		}
		n = n*10 + uint64(c-'0')
	}
	// 19 digits fit in a uint64; the int64 range is one wider below zero.
	if neg {
		if n > 1<<63 {
			return 0, fmt.Errorf("%w: integer %q overflows", ErrProtocol, b)
		}
		return -int64(n), nil
	}
	if n > 1<<63-1 {
		return 0, fmt.Errorf("%w: integer %q overflows", ErrProtocol, b)
	}
	return int64(n), nil
}

// appendArrayHeader appends the RESP header of an array of n bulk strings.
func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// appendBulkHeader appends the "$LEN\r\n" that precedes a bulk string.
func appendBulkHeader(b []byte, n int) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// appendBulkString appends s as a whole bulk string.
func appendBulkString(b []byte, s string) []byte {
	b = appendBulkHeader(b, len(s))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendReply appends the RESP2 encoding of v; tests use it to build
// server replies and to round-trip decoded ones.
func appendReply(b []byte, v Reply) []byte {
	switch v.Kind {
	case KindSimple:
		b = append(b, '+')
		b = append(b, v.Str...)
		return append(b, '\r', '\n')
	case KindError:
		b = append(b, '-')
		b = append(b, v.Str...)
		return append(b, '\r', '\n')
	case KindInt:
		b = append(b, ':')
		b = strconv.AppendInt(b, v.Int, 10)
		return append(b, '\r', '\n')
	case KindBulk:
		b = appendBulkHeader(b, len(v.Str))
		b = append(b, v.Str...)
		return append(b, '\r', '\n')
	case KindNil:
		return append(b, "$-1\r\n"...)
	case KindArray:
		b = appendArrayHeader(b, len(v.Elems))
		for _, e := range v.Elems {
			b = appendReply(b, e)
		}
		return b
	}
	panic("redisstore: appendReply of " + v.Kind.String())
}
