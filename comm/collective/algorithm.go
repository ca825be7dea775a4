package collective

import (
	"fmt"
	"strings"
)

// Algorithm selects how Allreduce is scheduled.
type Algorithm uint8

const (
	// Auto picks by message size and group size; see Resolve.
	Auto Algorithm = iota
	// Tree is TreeAllreduce: binomial reduce to rank 0, then broadcast
	// (FireCaffe's reduction tree; the sync-tree scheme).
	Tree
	// Ring is RingAllreduce: reduce-scatter plus allgather,
	// bandwidth-optimal for large messages.
	Ring
	// RecursiveDoubling is RecursiveDoublingAllreduce: fewest rounds, for
	// small messages.
	RecursiveDoubling
)

// SmallMessageBytes is the size below which Auto uses recursive doubling:
// under it the latency of a round costs more than moving the buffer.
const SmallMessageBytes = 64 << 10

// MinRingChunkBytes is the smallest ring chunk Auto accepts: a ring over
// many ranks has 2(p-1) rounds, and with chunks smaller than this the
// per-round latency outweighs the bandwidth the ring saves.
const MinRingChunkBytes = 8 << 10

var algNames = [...]string{Auto: "auto", Tree: "tree", Ring: "ring", RecursiveDoubling: "rd"}

// String returns the flag spelling: "auto", "tree", "ring" or "rd".
func (a Algorithm) String() string {
	if int(a) < len(algNames) {
		return algNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm reads a flag value: "auto", "tree", "ring" or "rd"
// ("recursive-doubling" is accepted too), case-insensitively.
func ParseAlgorithm(s string) (Algorithm, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "recursive-doubling" {
		return RecursiveDoubling, nil
	}
	for a, name := range algNames {
		if v == name {
			return Algorithm(a), nil
		}
	}
	return Auto, fmt.Errorf("collective: unknown allreduce algorithm %q (choices: auto, tree, ring, rd)", s)
}

// Set parses s into a, so that *Algorithm is a flag.Value.
func (a *Algorithm) Set(s string) error {
	v, err := ParseAlgorithm(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// MarshalText returns the flag spelling.
func (a Algorithm) MarshalText() ([]byte, error) {
	if int(a) >= len(algNames) {
		return nil, fmt.Errorf("collective: unknown algorithm %d", uint8(a))
	}
	return []byte(a.String()), nil
}

// UnmarshalText parses the flag spelling (for flag.TextVar and config files).
func (a *Algorithm) UnmarshalText(b []byte) error { return a.Set(string(b)) }

// Resolve returns the concrete algorithm for an allreduce of n floats over
// size ranks: a itself unless it is Auto.
//
// Auto chooses recursive doubling when the message is under
// SmallMessageBytes or a ring chunk (4n/size bytes) would be under
// MinRingChunkBytes, and the ring otherwise. It never chooses Tree: with
// full-duplex links recursive doubling needs fewer rounds (log2 p, or
// floor(log2 p)+2, against 2·ceil(log2 p)) and no more bytes per rank than
// the tree, and the ring moves fewer bytes per rank for large messages.
// The tree only wins where the total traffic on a shared medium is the
// bottleneck, which Auto cannot know; ask for it by name (the sync-tree
// scheme does).
func (a Algorithm) Resolve(size, n int) Algorithm {
	if a != Auto {
		if int(a) >= len(algNames) {
			panic(fmt.Sprintf("collective: unknown algorithm %d", uint8(a)))
		}
		return a
	}
	bytes := 4 * int64(n)
	if size <= 1 || bytes < SmallMessageBytes || bytes < int64(size)*MinRingChunkBytes {
		return RecursiveDoubling
	}
	return Ring
}
