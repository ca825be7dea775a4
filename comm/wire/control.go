package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// MaxString is the longest string a control message may carry, in bytes.
const MaxString = 1 << 16

// MaxToken is the longest token a Hello may carry, and MaxHello the
// largest Hello frame payload a server reads from a peer that has not yet
// authenticated: a hello is small, so a stranger cannot make a server
// allocate more than this per connection.
const (
	MaxToken = 1024
	MaxHello = 4096
)

// Control is one of the control messages of the rendezvous: Hello, Welcome
// or Reject. The set is closed; DecodeControl returns one of them.
type Control interface {
	// AppendBinary appends the message's encoding, type byte first, to
	// dst. It fails only for a value that cannot be encoded (a string
	// longer than MaxString, a rank or size outside uint32).
	AppendBinary(dst []byte) ([]byte, error)
	controlType() byte
}

// The control message types, the first byte of a control payload.
const (
	typeHello   = 1
	typeWelcome = 2
	typeReject  = 3
)

// Hello is what a rank says first: to rank 0 at the rendezvous, and to
// each peer when it opens the data connection.
type Hello struct {
	// Version is the sender's protocol version (the package's Version).
	Version uint16
	// Token is the group's shared secret; it keeps strangers and other
	// jobs out, it is not cryptographic protection.
	Token string
	// Rank and Size are the sender's rank and its idea of the group size.
	Rank, Size int
	// ModelHash identifies the parameter layout the sender trains; all
	// ranks must agree.
	ModelHash uint64
	// ListenAddr is the host:port where the sender accepts data
	// connections (empty where not needed).
	ListenAddr string
	// Host identifies the sender's shared-memory domain (package shm's
	// HostID) on a data connection whose sender offers shared memory;
	// empty otherwise. It travels after the other fields only when set,
	// so a Hello without it encodes as before.
	Host string
}

// Welcome is rank 0's answer once every rank has said Hello: the data
// addresses of all ranks, indexed by rank.
type Welcome struct {
	Addrs []string
}

// Reject refuses a Hello, saying why.
type Reject struct {
	Reason string
}

func (Hello) controlType() byte   { return typeHello }
func (Welcome) controlType() byte { return typeWelcome }
func (Reject) controlType() byte  { return typeReject }

// AppendBinary appends h's encoding to dst.
func (h Hello) AppendBinary(dst []byte) ([]byte, error) {
	if h.Rank < 0 || int64(h.Rank) > math.MaxUint32 || h.Size < 0 || int64(h.Size) > math.MaxUint32 {
		return dst, fmt.Errorf("wire: hello with rank %d, size %d outside [0, 2^32)", h.Rank, h.Size)
	}
	dst = append(dst, typeHello)
	dst = binary.LittleEndian.AppendUint16(dst, h.Version)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.Rank))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(h.Size))
	dst = binary.LittleEndian.AppendUint64(dst, h.ModelHash)
	var err error
	if dst, err = appendString(dst, "token", h.Token); err != nil {
		return dst, err
	}
	if dst, err = appendString(dst, "listen address", h.ListenAddr); err != nil || h.Host == "" {
		return dst, err
	}
	return appendString(dst, "host", h.Host)
}

// AppendBinary appends w's encoding to dst.
func (w Welcome) AppendBinary(dst []byte) ([]byte, error) {
	if int64(len(w.Addrs)) > math.MaxUint32 {
		return dst, fmt.Errorf("wire: welcome with %d addresses", len(w.Addrs))
	}
	dst = append(dst, typeWelcome)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(w.Addrs)))
	for _, a := range w.Addrs {
		var err error
		if dst, err = appendString(dst, "address", a); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// AppendBinary appends r's encoding to dst.
func (r Reject) AppendBinary(dst []byte) ([]byte, error) {
	return appendString(append(dst, typeReject), "reason", r.Reason)
}

func appendString(dst []byte, what, s string) ([]byte, error) {
	if len(s) > MaxString {
		return dst, fmt.Errorf("wire: %s of %d bytes, limit %d", what, len(s), MaxString)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...), nil
}

// DecodeControl decodes a control payload produced by AppendBinary. It
// returns a Hello, Welcome or Reject value, or an error wrapping
// ErrMalformed for an unknown type, truncated or trailing bytes, or a
// string longer than MaxString.
func DecodeControl(b []byte) (Control, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty control message", ErrMalformed)
	}
	d := decoder{b: b[1:]}
	var m Control
	switch b[0] {
	case typeHello:
		var h Hello
		h.Version = d.u16()
		h.Rank = int(d.u32())
		h.Size = int(d.u32())
		h.ModelHash = d.u64()
		h.Token = d.str()
		h.ListenAddr = d.str()
		if d.err == nil && len(d.b) > 0 {
			h.Host = d.str()
		}
		m = h
	case typeWelcome:
		n := d.u32()
		// Each address takes at least its 4-byte length, which bounds n
		// by the input before anything is allocated.
		if d.err == nil && uint64(n) > uint64(len(d.b))/4 {
			d.fail("welcome announces %d addresses in %d bytes", n, len(d.b))
		}
		var w Welcome
		if d.err == nil {
			w.Addrs = make([]string, n)
			for i := range w.Addrs {
				w.Addrs[i] = d.str()
			}
		}
		m = w
	case typeReject:
		m = Reject{Reason: d.str()}
	default:
		return nil, fmt.Errorf("%w: unknown control message type %d", ErrMalformed, b[0])
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes after the control message", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

// decoder reads little-endian fields from b, recording the first error
// and returning zero values after it.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("control message truncated: need %d more bytes, have %d", n, len(d.b))
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u16() uint16 {
	if p := d.take(2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) str() string {
	n := d.u32()
	if d.err != nil {
		return ""
	}
	if n > MaxString {
		d.fail("string of %d bytes, limit %d", n, MaxString)
		return ""
	}
	return string(d.take(int(n)))
}
