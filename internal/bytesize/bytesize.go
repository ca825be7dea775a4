// Package bytesize parses the sizes a user writes in flags and the
// environment: a number with an optional binary unit (B, KiB, MiB, GiB,
// TiB; case-insensitive), such as 8GiB, 512 KiB or 1.5MiB.
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The kinds of error Parse returns, for errors.Is: a size that is not a
// number with a unit, one out of range (negative or past an int64), and
// one that is not a whole number of bytes.
var (
	ErrSyntax   = errors.New("want a number with an optional unit B, KiB, MiB, GiB or TiB")
	ErrRange    = errors.New("out of range")
	ErrFraction = errors.New("not a whole number of bytes")
)

// units are the suffixes Parse takes, longest first so that "kib" is
// not read as "b".
var units = []struct {
	suffix string
	mult   float64
}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"b", 1}}

// Parse is the size s in bytes: a finite number with an optional unit,
// a bare number counting in units of bare bytes (1<<20 to read it as
// MiB). A size that is not a whole number of bytes (ErrFraction),
// negative or past what an int64 holds (ErrRange), or not a number with a
// unit (ErrSyntax) is an error naming s.
func Parse(s string, bare int64) (int64, error) {
	s = strings.TrimSpace(s)
	num, mult := s, float64(bare)
	lower := strings.ToLower(s)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			num, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: %w", s, ErrSyntax)
	}
	b := v * mult
	switch {
	case b < 0:
		return 0, fmt.Errorf("size %q is negative: %w", s, ErrRange)
	case b >= math.MaxInt64:
		return 0, fmt.Errorf("size %q is too large: %w", s, ErrRange)
	case b != math.Trunc(b):
		return 0, fmt.Errorf("size %q is %g bytes: %w", s, b, ErrFraction)
	}
	return int64(b), nil
}
