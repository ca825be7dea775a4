//go:build linux

package shm

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testGroups returns p ranks' views of one group over anonymous shared
// memory.
func testGroups(t *testing.T, p, slot int) []*Group {
	t.Helper()
	mem, err := syscall.Mmap(-1, 0, GroupSize(p, slot), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	gs := make([]*Group, p)
	for r := range p {
		if gs[r], err = NewGroup(mem, r, p, slot); err != nil {
			t.Fatal(err)
		}
		gs[r].Dir = t.TempDir()
	}
	return gs
}

// TestQuiesce: a failed rank waits while a live peer is still at its
// buffer in the same operation, names it when the wait times out, and
// returns once the peer is done.
func TestQuiesce(t *testing.T) {
	gs := testGroups(t, 2, 4096)
	for _, g := range gs {
		if err := g.Begin(); err != nil {
			t.Fatal(err)
		}
	}
	gs[0].Timeout = 50 * time.Millisecond
	if err := gs[0].Quiesce(); err != nil {
		t.Fatalf("no peer at the buffer: %v", err)
	}
	gs[1].Access(true)
	err := gs[0].Quiesce()
	if re, ok := err.(*RankError); !ok || re.Rank != 1 {
		t.Fatalf("peer still at the buffer: %v, want rank 1 named", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		gs[1].Access(false)
	}()
	gs[0].Timeout = 10 * time.Second
	if err := gs[0].Quiesce(); err != nil {
		t.Fatalf("peer done: %v", err)
	}
}

// TestAllocArgs: sizes Alloc cannot serve are refused before any rank
// waits for another.
func TestAllocArgs(t *testing.T) {
	g := testGroups(t, 1, 4096)[0]
	for _, n := range []int{0, -64, 100, 1 << 32} {
		if _, err := g.Alloc(context.Background(), n); err == nil || !strings.Contains(err.Error(), "multiple of 64") {
			t.Errorf("Alloc(%d): %v", n, err)
		}
	}
	small := testGroups(t, 1, 64)[0]
	if _, err := small.Alloc(context.Background(), 4096); err == nil || !strings.Contains(err.Error(), "segment's name") {
		t.Errorf("slots of 64 bytes: %v", err)
	}
	b, err := g.Alloc(context.Background(), 4096)
	if err != nil || len(b) != 4096 {
		t.Fatalf("a group of one: %d bytes, %v", len(b), err)
	}
	f := make([]float32, 4)
	if g.Holds(f) {
		t.Error("Holds says yes of ordinary memory")
	}
}

// TestBrokenGroupNamesRootCause: a rank that finds the group broken by a
// messenger (a rank that only passed on a third rank's failure) reports
// the root cause when its Check learns of it within the grace, and the
// messenger when nothing more comes.
func TestBrokenGroupNamesRootCause(t *testing.T) {
	root := errors.New("rank 1: injected failure")
	for _, tc := range []struct {
		name  string
		check func() error
		want  string
	}{
		{"cause arrives late", func() func() error {
			at := time.Now().Add(30 * time.Millisecond)
			return func() error {
				if time.Now().After(at) {
					return root
				}
				return nil
			}
		}(), "injected failure"},
		{"no cause", func() error { return nil }, "rank 2: left the host's shared-memory collective"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := testGroups(t, 3, 4096)
			gs[0].Timeout = 10 * time.Second
			gs[0].Check = tc.check
			gs[2].Break()
			err := gs[0].Sync(context.Background(), false, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
