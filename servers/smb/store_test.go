package smb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// buffersSuite runs the conformance tests every Buffers passes; newB
// returns an empty one (a Store, or a Client of a server over a Store).
func buffersSuite(t *testing.T, newB func(t *testing.T) Buffers) {
	t.Run("Errors", func(t *testing.T) { testErrors(t, newB(t)) })
	t.Run("ReadWrite", func(t *testing.T) { testReadWrite(t, newB(t)) })
	t.Run("Accumulate", func(t *testing.T) { testAccumulate(t, newB(t)) })
	t.Run("Versions", func(t *testing.T) { testVersions(t, newB(t)) })
	t.Run("Control", func(t *testing.T) { testControl(t, newB(t)) })
	t.Run("ConcurrentAccumulate", func(t *testing.T) { testConcurrentAccumulate(t, newB(t)) })
}

func TestStore(t *testing.T) {
	buffersSuite(t, func(*testing.T) Buffers { return NewStore(0) })
}

func mustCreate(t *testing.T, b Buffers, key string, n int) {
	t.Helper()
	if _, err := b.Create(context.Background(), key, n); err != nil {
		t.Fatalf("Create(%q, %d): %v", key, n, err)
	}
}

func testErrors(t *testing.T, b Buffers) {
	ctx := context.Background()
	mustCreate(t, b, "a", 10)
	mustCreate(t, b, "b", 4)
	if _, err := b.CreateControl(ctx, 3); err != nil {
		t.Fatal(err)
	}
	orig := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if err := b.Write(ctx, "a", 0, orig); err != nil {
		t.Fatal(err)
	}
	f := func(n int) []float32 { return make([]float32, n) }
	i := func(n int) []int64 { return make([]int64, n) }
	tests := []struct {
		name string
		op   func() error
		is   error
		want []string // substrings of the message
	}{
		{"create empty key", func() error { _, err := b.Create(ctx, "", 3); return err }, ErrInvalid, []string{"empty key"}},
		{"create long key", func() error { _, err := b.Create(ctx, strings.Repeat("k", MaxKeyLen+1), 3); return err }, ErrInvalid, []string{"256 bytes"}},
		{"create size 0", func() error { _, err := b.Create(ctx, "z", 0); return err }, ErrInvalid, []string{`"z"`, "0 values"}},
		{"create other size", func() error { _, err := b.Create(ctx, "a", 11); return err }, ErrSize, []string{`"a"`, "11", "10"}},
		{"attach unknown", func() error { _, err := b.Attach(ctx, "nope"); return err }, ErrUnknownKey, []string{`"nope"`}},
		{"read unknown", func() error { return b.Read(ctx, "nope", 0, f(1)) }, ErrUnknownKey, []string{`"nope"`}},
		{"write unknown", func() error { return b.Write(ctx, "nope", 0, f(1)) }, ErrUnknownKey, []string{`"nope"`}},
		{"version unknown", func() error { _, err := b.Version(ctx, "nope"); return err }, ErrUnknownKey, []string{`"nope"`}},
		{"notify unknown", func() error { _, err := b.Notify(ctx, "nope"); return err }, ErrUnknownKey, []string{`"nope"`}},
		{"wait unknown", func() error { _, err := b.Wait(ctx, "nope", 0); return err }, ErrUnknownKey, []string{`"nope"`}},
		{"accumulate unknown dst", func() error { return b.Accumulate(ctx, "nope", "a") }, ErrUnknownKey, []string{`"nope"`, "into"}},
		{"accumulate unknown src", func() error { return b.Accumulate(ctx, "a", "nope") }, ErrUnknownKey, []string{`"nope"`, "from"}},
		{"accumulate sizes", func() error { return b.Accumulate(ctx, "a", "b") }, ErrSize, []string{`"a"`, `"b"`, "10", "4"}},
		{"read past end", func() error { return b.Read(ctx, "a", 8, f(3)) }, ErrBounds, []string{"read", `"a"`, "offset 8", "3 values", "holds 10"}},
		{"read negative offset", func() error { return b.Read(ctx, "a", -1, f(2)) }, ErrBounds, []string{"offset -1", "holds 10"}},
		{"read too long", func() error { return b.Read(ctx, "a", 0, f(11)) }, ErrBounds, []string{"11 values", "holds 10"}},
		{"write past end", func() error { return b.Write(ctx, "a", 9, []float32{-1, -1}) }, ErrBounds, []string{"write", `"a"`, "offset 9", "2 values", "holds 10"}},
		{"write negative offset", func() error { return b.Write(ctx, "a", -5, []float32{-1}) }, ErrBounds, []string{"offset -5"}},
		{"write huge offset", func() error { return b.Write(ctx, "a", 1<<40, []float32{-1}) }, ErrBounds, []string{"offset 1099511627776"}},
		{"control other size", func() error { _, err := b.CreateControl(ctx, 4); return err }, ErrSize, []string{"4 slots", "3"}},
		{"control size 0", func() error { _, err := b.CreateControl(ctx, 0); return err }, ErrInvalid, []string{"0 slots"}},
		{"control read past end", func() error { _, err := b.ReadControl(ctx, 2, i(2)); return err }, ErrBounds, []string{"read", "2 slots", "offset 2", "holds 3"}},
		{"control write past end", func() error { return b.WriteControl(ctx, 3, i(1)) }, ErrBounds, []string{"write", "offset 3", "holds 3"}},
		{"control write negative", func() error { return b.WriteControl(ctx, -1, i(1)) }, ErrBounds, []string{"offset -1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// Nothing was written by the refused writes.
	got := make([]float32, 10)
	if err := b.Read(ctx, "a", 0, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, orig) {
		t.Errorf("after refused writes a = %v, want %v", got, orig)
	}
	if n, err := b.Attach(ctx, "b"); err != nil || n != 4 {
		t.Errorf("Attach(b) = %d, %v; want 4", n, err)
	}
}

func testReadWrite(t *testing.T, b Buffers) {
	ctx := context.Background()
	created, err := b.Create(ctx, "w", 6)
	if err != nil || !created {
		t.Fatalf("Create = %v, %v; want created", created, err)
	}
	if created, err := b.Create(ctx, "w", 6); err != nil || created {
		t.Fatalf("second Create = %v, %v; want existing, no error", created, err)
	}
	tests := []struct {
		off  int
		src  []float32
		want []float32
	}{
		{0, nil, []float32{0, 0, 0, 0, 0, 0}},
		{0, []float32{1, 2}, []float32{1, 2, 0, 0, 0, 0}},
		{4, []float32{5, 6}, []float32{1, 2, 0, 0, 5, 6}},
		{6, []float32{}, []float32{1, 2, 0, 0, 5, 6}},
		{1, []float32{-1, -2, -3, -4, -5}, []float32{1, -1, -2, -3, -4, -5}},
	}
	for _, tc := range tests {
		if err := b.Write(ctx, "w", tc.off, tc.src); err != nil {
			t.Fatalf("Write(%d, %v): %v", tc.off, tc.src, err)
		}
		got := make([]float32, 6)
		if err := b.Read(ctx, "w", 0, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("after Write(%d, %v): %v, want %v", tc.off, tc.src, got, tc.want)
		}
		part := make([]float32, 2)
		if err := b.Read(ctx, "w", 3, part); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(part, tc.want[3:5]) {
			t.Errorf("Read(3, 2) = %v, want %v", part, tc.want[3:5])
		}
	}
}

func testAccumulate(t *testing.T, b Buffers) {
	ctx := context.Background()
	for _, k := range []string{"x", "y"} {
		mustCreate(t, b, k, 3)
	}
	if err := b.Write(ctx, "x", 0, []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, "y", 0, []float32{10, 20, 30}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dst, src string
		x, y     []float32
	}{
		{"x", "y", []float32{11, 22, 33}, []float32{10, 20, 30}},
		{"y", "x", []float32{11, 22, 33}, []float32{21, 42, 63}},
		{"x", "x", []float32{22, 44, 66}, []float32{21, 42, 63}},
	}
	for _, tc := range tests {
		if err := b.Accumulate(ctx, tc.dst, tc.src); err != nil {
			t.Fatal(err)
		}
		x, y := make([]float32, 3), make([]float32, 3)
		if err := b.Read(ctx, "x", 0, x); err != nil {
			t.Fatal(err)
		}
		if err := b.Read(ctx, "y", 0, y); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(x, tc.x) || !slices.Equal(y, tc.y) {
			t.Errorf("after %s += %s: x=%v y=%v, want %v %v", tc.dst, tc.src, x, y, tc.x, tc.y)
		}
	}
}

func testVersions(t *testing.T, b Buffers) {
	ctx := context.Background()
	mustCreate(t, b, "v", 2)
	mustCreate(t, b, "s", 2)
	v0, err := b.Version(ctx, "v")
	if err != nil || v0 != 0 {
		t.Fatalf("fresh Version = %d, %v; want 0", v0, err)
	}
	steps := []struct {
		name string
		op   func() error
	}{
		{"write", func() error { return b.Write(ctx, "v", 0, []float32{1}) }},
		{"accumulate", func() error { return b.Accumulate(ctx, "v", "s") }},
		{"notify", func() error { _, err := b.Notify(ctx, "v"); return err }},
	}
	want := uint64(0)
	for _, st := range steps {
		if err := st.op(); err != nil {
			t.Fatal(err)
		}
		want++
		if v, err := b.Version(ctx, "v"); err != nil || v != want {
			t.Errorf("after %s Version = %d, %v; want %d", st.name, v, err, want)
		}
		// Wait with an old version returns at once.
		if v, err := b.Wait(ctx, "v", want-1); err != nil || v != want {
			t.Errorf("Wait(%d) = %d, %v; want %d", want-1, v, err, want)
		}
	}
	// A read does not advance the version, and accumulating v into s
	// advances s's, not v's.
	if err := b.Read(ctx, "v", 0, make([]float32, 2)); err != nil {
		t.Fatal(err)
	}
	if err := b.Accumulate(ctx, "s", "v"); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.Version(ctx, "v"); v != want {
		t.Errorf("Version = %d after a read and an accumulate out of it; want %d", v, want)
	}
	// Wait blocks until a notify.
	done := make(chan uint64, 1)
	go func() {
		v, err := b.Wait(ctx, "v", want)
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	select {
	case v := <-done:
		t.Fatalf("Wait returned %d before any change", v)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := b.Notify(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-done:
		if v != want+1 {
			t.Errorf("Wait = %d, want %d", v, want+1)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after Notify")
	}
	// Wait ends with its context.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := b.Wait(cctx, "v", want+1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait past its deadline: %v, want DeadlineExceeded", err)
	}
}

func testControl(t *testing.T, b Buffers) {
	ctx := context.Background()
	if _, err := b.ReadControl(ctx, 0, make([]int64, 1)); !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "control area") {
		t.Errorf("ReadControl before CreateControl: %v", err)
	}
	if created, err := b.CreateControl(ctx, 4); err != nil || !created {
		t.Fatalf("CreateControl = %v, %v", created, err)
	}
	if created, err := b.CreateControl(ctx, 4); err != nil || created {
		t.Fatalf("second CreateControl = %v, %v", created, err)
	}
	v0, err := b.ReadControl(ctx, 0, make([]int64, 4))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		off  int
		src  []int64
		want []int64
	}{
		{0, []int64{5, 6, 7, 8}, []int64{5, 6, 7, 8}},
		{2, []int64{-9}, []int64{5, 6, -9, 8}},
		{3, []int64{1 << 62}, []int64{5, 6, -9, 1 << 62}},
	}
	for i, tc := range tests {
		if err := b.WriteControl(ctx, tc.off, tc.src); err != nil {
			t.Fatal(err)
		}
		got := make([]int64, 4)
		v, err := b.ReadControl(ctx, 0, got)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) || v != v0+uint64(i)+1 {
			t.Errorf("after WriteControl(%d, %v): %v version %d, want %v version %d", tc.off, tc.src, got, v, tc.want, v0+uint64(i)+1)
		}
		one := make([]int64, 1)
		if _, err := b.ReadControl(ctx, 2, one); err != nil || one[0] != tc.want[2] {
			t.Errorf("ReadControl(2) = %v, %v; want %d", one, err, tc.want[2])
		}
	}
	v, _ := b.ReadControl(ctx, 0, make([]int64, 1))
	done := make(chan uint64, 1)
	go func() {
		nv, err := b.WaitControl(ctx, v)
		if err != nil {
			t.Error(err)
		}
		done <- nv
	}()
	time.Sleep(20 * time.Millisecond)
	if err := b.WriteControl(ctx, 1, []int64{1}); err != nil {
		t.Fatal(err)
	}
	select {
	case nv := <-done:
		if nv != v+1 {
			t.Errorf("WaitControl = %d, want %d", nv, v+1)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitControl did not return after WriteControl")
	}
}

// testConcurrentAccumulate checks T.A3: concurrent accumulates into one
// buffer lose no update, while writers of their own increments and
// readers run beside them.
func testConcurrentAccumulate(t *testing.T, b Buffers) {
	ctx := context.Background()
	const n, workers, rounds = 257, 4, 50
	mustCreate(t, b, "g", n)
	var wg sync.WaitGroup
	for w := range workers {
		key := "d" + string(rune('0'+w))
		mustCreate(t, b, key, n)
		wg.Go(func() {
			inc := make([]float32, n)
			for i := range inc {
				inc[i] = float32(w + 1)
			}
			if err := b.Write(ctx, key, 0, inc); err != nil {
				t.Error(err)
				return
			}
			dst := make([]float32, n)
			for range rounds {
				if err := b.Accumulate(ctx, "g", key); err != nil {
					t.Error(err)
					return
				}
				if err := b.Read(ctx, "g", 0, dst); err != nil {
					t.Error(err)
					return
				}
				// Reads see whole accumulates: every element equal.
				for i := range dst {
					if dst[i] != dst[0] {
						t.Errorf("torn read: g[%d]=%v, g[0]=%v", i, dst[i], dst[0])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	got := make([]float32, n)
	if err := b.Read(ctx, "g", 0, got); err != nil {
		t.Fatal(err)
	}
	want := float32(rounds * (1 + 2 + 3 + 4))
	for i, v := range got {
		if v != want {
			t.Fatalf("g[%d] = %v after the accumulates, want %v", i, v, want)
		}
	}
}

func TestStoreLimit(t *testing.T) {
	ctx := context.Background()
	s := NewStore(100)
	mustCreate(t, s, "a", 20) // 81 bytes
	if _, err := s.Create(ctx, "b", 5); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("create past the limit: %v", err)
	}
	if _, err := s.Create(ctx, "c", 1<<40); !errors.Is(err, ErrLimit) {
		t.Errorf("huge create: %v", err)
	}
	mustCreate(t, s, "b", 4) // 17 bytes: 98 in all
}

func TestStoreNoAlloc(t *testing.T) {
	ctx := context.Background()
	s := NewStore(0)
	mustCreate(t, s, "g", 64)
	mustCreate(t, s, "d", 64)
	if _, err := s.CreateControl(ctx, 4); err != nil {
		t.Fatal(err)
	}
	buf := make([]float32, 64)
	slots := make([]int64, 4)
	allocs := testing.AllocsPerRun(100, func() {
		_ = s.Write(ctx, "d", 0, buf)
		_ = s.Accumulate(ctx, "g", "d")
		_ = s.Read(ctx, "g", 0, buf)
		_ = s.WriteControl(ctx, 0, slots[:1])
		_, _ = s.ReadControl(ctx, 0, slots)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per steady-state round, want 0", allocs)
	}
}

// TestFree: a freed buffer is gone, its bytes count no more against the
// store's limit, and freeing it again is no error; the same over the
// wire.
func TestFree(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			b, s := be.new(t)
			if _, err := b.Create(ctx, "a", 8); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := b.Free(ctx, "a"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.Attach(ctx, "a"); !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("attach after free: %v", err)
			}
			s.mu.RLock()
			bytes := s.bytes
			s.mu.RUnlock()
			if bytes != 0 {
				t.Fatalf("the store counts %d bytes after the free, want 0", bytes)
			}
		})
	}
}
