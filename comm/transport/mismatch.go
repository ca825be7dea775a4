package transport

import "fmt"

// Mismatch says why a message is not the one a receive asked for, or
// returns nil when it is. The receive asked for want floats with tag
// (Recv) or, with wantBytes, a byte message with tag of at most want bytes
// (RecvBytes); the message holds n floats or, with isBytes, n bytes, and
// has gotTag. Endpoints word the PeerErrors of their receives with it, so
// a mismatch reads the same over every transport.
func Mismatch(wantBytes bool, tag uint32, want int, isBytes bool, gotTag uint32, n uint64) error {
	switch {
	case !wantBytes && isBytes:
		return fmt.Errorf("expected %d floats with tag %d, got a %d-byte message with tag %d", want, tag, n, gotTag)
	case !wantBytes && (gotTag != tag || n != uint64(want)):
		return fmt.Errorf("expected %d floats with tag %d, got %d floats with tag %d", want, tag, n, gotTag)
	case wantBytes && !isBytes:
		return fmt.Errorf("expected a byte message with tag %d, got %d floats with tag %d", tag, n, gotTag)
	case wantBytes && gotTag != tag:
		return fmt.Errorf("expected a byte message with tag %d, got tag %d", tag, gotTag)
	case wantBytes && (want < 0 || n > uint64(want)):
		return fmt.Errorf("byte message of %d bytes exceeds the limit of %d", n, want)
	}
	return nil
}
