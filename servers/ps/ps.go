package ps

import (
	"context"
	"strconv"
)

// BlobStore carries float32 payloads by key (SpeeDO's Redis).
type BlobStore interface {
	PutFloats(ctx context.Context, key string, v []float32) error
	GetFloats(ctx context.Context, key string, dst []float32) error
}

// The keys of the blob store mode. A server with a ServerConfig.KeySuffix
// (a shard sharing the store with others) appends it to both.
const (
	// WeightsKey holds the center weights the server last published.
	WeightsKey = "dsgd:w"
	// DeltaKeyPrefix, followed by the worker id, holds a worker's push.
	DeltaKeyPrefix = "dsgd:delta:"
	// ExchangeKeyPrefix, followed by the worker id, holds a worker's
	// weights for an elastic exchange, and then the server's answer.
	ExchangeKeyPrefix = "dsgd:x:"
	// GradsKeyPrefix, followed by the worker id, holds a worker's
	// gradients for a weed-out round.
	GradsKeyPrefix = "dsgd:g:"
)

// DeltaKey returns the key under which worker w pushes its delta.
func DeltaKey(w int) string { return DeltaKeyPrefix + strconv.Itoa(w) }

// ExchangeKey returns the key of worker w's elastic exchanges.
func ExchangeKey(w int) string { return ExchangeKeyPrefix + strconv.Itoa(w) }

// GradsKey returns the key of worker w's weed-out gradients.
func GradsKey(w int) string { return GradsKeyPrefix + strconv.Itoa(w) }

// The rpc op codes of the parameter server protocol, and the fields each
// uses (I = Ints, F = Floats, T = Text, D = Data).
const (
	opInfo    = 1  // → I0 = N, I1 = version, I2 = 1 in store mode, I3 = heartbeat interval in ms (0: none); T = key suffix
	opJoin    = 2  // I0 = w, I1 = the worker's count of workers (0: unsaid) → I0 = iter
	opPull    = 3  // I0 = w → D = center
	opPush    = 4  // I0 = w, D = delta
	opElastic = 5  // I0 = w, F0 = alpha, D = x → D = new x
	opRound   = 6  // I0 = w, I1 = iter, D = grads → I0 = next, I1 = dropped
	opClock   = 7  // I0 = w, I1 = iter, I2 = s → I0 = stop
	opLeave   = 8  // I0 = w, T = cause ("" for nil)
	opPushKey = 9  // I0 = w, T = key of the delta in the store
	opVersion = 10 // I0 = w → I0 = version (publishes the center first if stale)
	opClosed  = 11 // I0 = w, I1 = iter → I0 = next (waits for round iter to close)
	// The blob store mode's elastic exchange and round: the data travel
	// through the store under T.
	opElasticKey = 12 // I0 = w, F0 = alpha, T = key of x; the new x goes back under T
	opRoundKey   = 13 // I0 = w, I1 = iter, T = key of the gradients → as opRound
	// opPing is a worker's heartbeat while it computes: it proves the
	// connection's workers alive (see ServerConfig.Silence).
	opPing = 14 // I0 = -1 → nothing
	// opFinal is the final model (center.FinalPuller): it waits until no
	// worker is present, then answers as an observer's opPull (or, in
	// blob store mode, publishes and answers opVersion's I0 = version).
	opFinal = 15 // I0 = -1 → data (store mode: I0 = version)
)

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
