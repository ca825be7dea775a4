package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"dsgd/protocol/scheme"
)

// streamingFlags are streaming-diloco's settings (Douillard et al. 2025),
// shared by train (and so compare) and simulate.
type streamingFlags struct {
	fragments, overlap, bits *int
	mix                      *float64
}

func (s *streamingFlags) register(fs *flag.FlagSet) {
	s.fragments = fs.Int("fragments", 1, "streaming-diloco: split the parameter blocks into `P` contiguous fragments of about equal size, in net order; fragment p synchronises after the iterations t with (t+1) mod H = (p+1)*H/P mod H (H = --interval, a multiple of P)")
	s.overlap = fs.Int("overlap", 0, "streaming-diloco: a fragment's outer step lands `TAU` inner steps after its pseudo-gradient is sent, the exchange running beside them (0: at once; less than H/P)")
	s.mix = fs.Float64("mix", scheme.StreamingMix, "streaming-diloco with --overlap > 0: a landing fragment's weights become MIX*local + (1-MIX)*global (the paper's alpha, 0.5); with --overlap 0 the global weights replace them")
	s.bits = fs.Int("outer-bits", 32, "streaming-diloco: the pseudo-gradients travel in 32 (float32), 16 (bfloat16), 8 (integers scaled by the chunk's largest value) or 4 bits (sign and 3-bit exponent, E3M0, scaled likewise); every sum is taken in float32")
}

// apply checks the flags and fills the scheme's settings. A flag given
// for a run that has no streaming-diloco is refused, naming --scheme.
func (s *streamingFlags) apply(fs *flag.FlagSet, streaming bool, frags, overlap *int, mix *float32, bits *int) error {
	var given []string
	if fs != nil {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "fragments", "overlap", "mix", "outer-bits":
				given = append(given, "--"+f.Name)
			}
		})
	}
	switch {
	case !streaming && len(given) > 0:
		return fmt.Errorf("%s: only --scheme streaming-diloco synchronises by fragments", given[0])
	case *s.fragments < 1:
		return fmt.Errorf("--fragments must be at least 1, got %d", *s.fragments)
	case *s.overlap < 0:
		return fmt.Errorf("--overlap must not be negative, got %d", *s.overlap)
	case *s.mix < 0 || *s.mix > 1:
		return fmt.Errorf("--mix must be in [0,1], got %g", *s.mix)
	case !slices.Contains(scheme.OuterBitsChoices, *s.bits):
		return fmt.Errorf("--outer-bits must be one of %v, got %d", scheme.OuterBitsChoices, *s.bits)
	}
	*frags, *overlap, *mix, *bits = *s.fragments, *s.overlap, float32(*s.mix), *s.bits
	return nil
}

// streamingFlag reports whether arg (--name=value) sets one of
// streaming-diloco's flags.
func streamingFlag(arg string) bool {
	for _, n := range []string{"fragments", "overlap", "mix", "outer-bits"} {
		if strings.HasPrefix(arg, "--"+n+"=") {
			return true
		}
	}
	return false
}
