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
)

// DeltaKey returns the key under which worker w pushes its delta.
func DeltaKey(w int) string { return DeltaKeyPrefix + strconv.Itoa(w) }

// The rpc op codes of the parameter server protocol, and the fields each
// uses (I = Ints, F = Floats, T = Text, D = Data).
const (
	opInfo    = 1  // → I0 = N, I1 = version, I2 = 1 in store mode; T = key suffix
	opJoin    = 2  // I0 = w → I0 = iter
	opPull    = 3  // I0 = w → D = center
	opPush    = 4  // I0 = w, D = delta
	opElastic = 5  // I0 = w, F0 = alpha, D = x → D = new x
	opRound   = 6  // I0 = w, I1 = iter, D = grads → I0 = next, I1 = dropped
	opClock   = 7  // I0 = w, I1 = iter, I2 = s → I0 = stop
	opLeave   = 8  // I0 = w, T = cause ("" for nil)
	opPushKey = 9  // I0 = w, T = key of the delta in the store
	opVersion = 10 // I0 = w → I0 = version (publishes the center first if stale)
	opClosed  = 11 // I0 = w, I1 = iter → I0 = next (waits for round iter to close)
)

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
