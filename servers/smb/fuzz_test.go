package smb

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"dsgd/comm/rpc"
)

// FuzzHandle feeds the server's request decoder arbitrary op codes,
// integers, keys and payloads: it must answer or refuse, never panic,
// and never let the store pass its limit.
func FuzzHandle(f *testing.F) {
	f.Add(uint32(opRead), int64(0), int64(4), int64(0), int64(4), "a", []byte{})
	f.Add(uint32(opWrite), int64(2), int64(0), int64(2), int64(2), "a", make([]byte, 8))
	f.Add(uint32(opWrite), int64(-1), int64(0), int64(math.MaxInt64), int64(math.MinInt64), "a", make([]byte, 8))
	f.Add(uint32(opAccumulate), int64(1), int64(0), int64(0), int64(0), "ab", []byte{})
	f.Add(uint32(opAccumulate), int64(-7), int64(0), int64(0), int64(0), "ab", []byte{})
	f.Add(uint32(opCreate), int64(1<<40), int64(0), int64(0), int64(0), "big", []byte{})
	f.Add(uint32(opReadControl), int64(0), int64(3), int64(0), int64(0), "", []byte{})
	f.Add(uint32(opWriteControl), int64(1), int64(0), int64(0), int64(0), "", make([]byte, 12))
	f.Add(uint32(opWait), int64(0), int64(1), int64(0), int64(0), "a", []byte{})
	f.Add(uint32(99), int64(0), int64(0), int64(0), int64(0), "", []byte{})
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, op uint32, i0, i1, i2, i3 int64, text string, payload []byte) {
		ctx := context.Background()
		store := NewStore(limit)
		for _, k := range []string{"a", "b", "ab"} {
			if _, err := store.Create(ctx, k, 4); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := store.CreateControl(ctx, 4); err != nil {
			t.Fatal(err)
		}
		if op == opWait || op == opWaitControl {
			i1 = 0 // no waiting in a fuzz loop
		}
		if op == opRead && i1 > limit {
			i1 = limit // a read's size is bounded by the buffer, checked first
		}
		data := make([]float32, len(payload)/4)
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(payload[4*i:]))
		}
		s := &Server{store: store, claims: newClaims(Config{})} // as Listen builds it
		req := &rpc.Request{Op: op, Ints: [rpc.NumInts]int64{i0, i1, i2, i3}, Text: text, Data: data}
		var resp rpc.Response
		err := s.handle(ctx, req, &resp)
		if err == nil && op == opRead && len(resp.Data) != int(i1) {
			t.Errorf("read of %d values answered with %d", i1, len(resp.Data))
		}
		if store.bytes > limit {
			t.Errorf("store holds %d bytes, limit %d", store.bytes, limit)
		}
	})
}
