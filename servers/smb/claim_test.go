package smb

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClaims: the server refuses a second live claimant of a rank, a
// worker count other than the job's and a rank outside the job, each
// naming both sides; it gives a rank back to a worker whose
// predecessor's connection closed (a restarted worker rejoins).
func TestClaims(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		srv  Config // the server's Workers
		// first claims rank0 of workers0, then a second client claims
		// rank1 of workers1, with the first client closed before when
		// closeFirst.
		rank0, workers0, rank1, workers1 int
		closeFirst                       bool
		run0, run1                       string   // the clients' run settings
		want                             []string // in the refusal; none: accepted
	}{
		{name: "same run settings", rank0: 0, workers0: 3, rank1: 1, workers1: 3, run0: "--seed=1\nbase_lr=0.01\n", run1: "--seed=1\nbase_lr=0.01\n"},
		{name: "other base_lr", rank0: 0, workers0: 3, rank1: 1, workers1: 3, run0: "--seed=1\nbase_lr=0.01\n", run1: "--seed=1\nbase_lr=50\n",
			want: []string{"rank refused", "rank 1 from 127.0.0.1:", "runs with base_lr 50", "this server's job has 0.01 (set by rank 0 from 127.0.0.1:"}},
		{name: "distinct ranks", rank0: 0, workers0: 3, rank1: 1, workers1: 3},
		{name: "duplicate rank", rank0: 1, workers0: 3, rank1: 1, workers1: 3,
			want: []string{"rank refused", "rank 1 is already held by a live worker connected from 127.0.0.1:", "refusing a second rank 1 from 127.0.0.1:"}},
		{name: "rejoin after the holder died", rank0: 1, workers0: 3, rank1: 1, workers1: 3, closeFirst: true},
		{name: "other worker count", rank0: 0, workers0: 3, rank1: 1, workers1: 4,
			want: []string{"rank 1 from 127.0.0.1:", "runs a job of 4 workers", "this server's job has 3 (set by rank 0 from 127.0.0.1:"}},
		{name: "other worker count than --workers", srv: Config{Workers: 2}, rank0: 0, workers0: 2, rank1: 1, workers1: 3,
			want: []string{"runs a job of 3 workers", "this server's job has 2 (set by its --workers)"}},
		{name: "first claim against --workers", srv: Config{Workers: 2}, rank0: 0, workers0: 2, rank1: 0, workers1: 5, closeFirst: true,
			want: []string{"runs a job of 5 workers", "has 2 (set by its --workers)"}},
		{name: "rank outside the job", rank0: 0, workers0: 3, rank1: 3, workers1: 3,
			want: []string{"rank 3 from 127.0.0.1:", "outside a job of 3 workers (ranks 0 to 2)"}},
		{name: "negative rank", rank0: 0, workers0: 3, rank1: -1, workers1: 3,
			want: []string{"rank -1", "outside a job of 3 workers"}},
		{name: "no workers", rank0: 0, workers0: 3, rank1: 0, workers1: 0,
			want: []string{"claims a job of 0 workers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var logged []string
			cfg := tc.srv
			cfg.ErrorLog = func(err error) {
				mu.Lock()
				logged = append(logged, err.Error())
				mu.Unlock()
			}
			srv := startServer(t, NewStore(0), cfg)
			a := dialTest(t, srv.Addr(), Config{Run: tc.run0})
			if err := a.Claim(ctx, tc.rank0, tc.workers0); err != nil {
				t.Fatalf("first claim: %v", err)
			}
			if tc.closeFirst {
				a.Close()
			}
			b := dialTest(t, srv.Addr(), Config{Run: tc.run1})
			t0 := time.Now()
			err := b.Claim(ctx, tc.rank1, tc.workers1)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("second claim refused: %v", err)
				}
				if d := time.Since(t0); tc.closeFirst && d > claimGrace/2 {
					t.Errorf("the rejoin waited %v: the holder's close was not noticed", d)
				}
				return
			}
			if !errors.Is(err, ErrRank) {
				t.Fatalf("second claim: %v, want ErrRank", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q lacks %q", err, w)
				}
			}
			// The server's log names the refusal too; the refused
			// client may claim what is free.
			mu.Lock()
			if len(logged) == 0 || !strings.Contains(logged[len(logged)-1], tc.want[0]) {
				t.Errorf("server log %q lacks the refusal", logged)
			}
			mu.Unlock()
			if tc.srv.Workers == 0 && !tc.closeFirst && tc.run1 == tc.run0 {
				if err := b.Claim(ctx, 2, tc.workers0); err != nil {
					t.Errorf("claiming a free rank after a refusal: %v", err)
				}
			}
		})
	}
}

// TestClaimSurvivesIdleness: the claims' connection is renewed often
// enough that the server (whose idle timeout is 10 × 30 ms here) never
// closes it, so an idle worker keeps its rank.
func TestClaimSurvivesIdleness(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, NewStore(0), Config{Timeout: 30 * time.Millisecond})
	a := dialTest(t, srv.Addr(), Config{Timeout: time.Second})
	if err := a.Claim(ctx, 0, 2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // three idle timeouts
	b := dialTest(t, srv.Addr(), Config{Timeout: time.Second})
	if err := b.Claim(ctx, 0, 2); !errors.Is(err, ErrRank) {
		t.Fatalf("a second claim of an idle worker's rank: %v, want ErrRank", err)
	}
	if err := a.Err(); err != nil {
		t.Fatalf("the idle worker lost its claim: %v", err)
	}
}

// TestClaimRenewedAfterDrop: when the claims' connection fails, the
// client claims its rank anew over a fresh one; when the rank was taken
// meanwhile, Err (and the center's Clock) says so.
func TestClaimRenewedAfterDrop(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, NewStore(0), Config{Timeout: 20 * time.Millisecond}) // renewals every 50 ms
	a := dialTest(t, srv.Addr(), Config{Timeout: time.Second})
	if err := a.Claim(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	a.hold.callMu.Lock()
	old := a.hold.conn
	old.Close() // as a broken connection fails
	a.hold.callMu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		a.hold.callMu.Lock()
		renewed := a.hold.conn != nil && a.hold.conn != old
		a.hold.callMu.Unlock()
		if renewed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fresh connection after the drop")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := dialTest(t, srv.Addr(), Config{Timeout: time.Second})
	if err := b.Claim(ctx, 1, 2); !errors.Is(err, ErrRank) {
		t.Fatalf("rank 1 after its holder reconnected: %v, want ErrRank", err)
	}
	b.Close()

	// Now another worker takes rank 1 while a's connection is down.
	a.hold.callMu.Lock()
	a.hold.conn.Close()
	a.hold.conn = nil
	time.Sleep(200 * time.Millisecond) // the server sees the close
	c := dialTest(t, srv.Addr(), Config{Timeout: time.Second})
	err := c.Claim(ctx, 1, 2)
	a.hold.callMu.Unlock()
	if err != nil {
		t.Fatalf("rank 1 while its holder was away: %v", err)
	}
	for a.Err() == nil {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatal("a never learned that it lost rank 1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(a.Err(), ErrRank) || !strings.Contains(a.Err().Error(), "rank 1 lost its claim") {
		t.Errorf("Err = %v", a.Err())
	}
}

// TestClaimingCenter: the adapter claims before it joins, so a duplicate
// worker is refused before it touches the buffers, and a closed
// worker's rank is taken over by its restart, which continues its count.
func TestClaimingCenter(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, NewStore(0), Config{})
	cfg := CenterConfig{Workers: 2, N: 3, Weights: []float32{1, 2, 3}, MaxIter: 100}
	newC := func() (*ClaimingCenter, *Client) {
		cl := dialTest(t, srv.Addr(), Config{})
		c, err := NewClaimingCenter(cl, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c, cl
	}
	c0, _ := newC()
	if _, err := c0.Join(ctx, 0); err != nil {
		t.Fatal(err)
	}
	c1, cl1 := newC()
	if _, err := c1.Join(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for it := range 5 {
		if _, err := c1.Clock(ctx, 1, it, -1); err != nil {
			t.Fatal(err)
		}
	}
	dup, _ := newC()
	if _, err := dup.Join(ctx, 1); !errors.Is(err, ErrRank) {
		t.Fatalf("a duplicate worker 1 joined: %v", err)
	}
	cl1.Close() // worker 1 dies
	again, _ := newC()
	iter, err := again.Join(ctx, 1)
	if err != nil {
		t.Fatalf("restarted worker 1: %v", err)
	}
	if iter != 5 {
		t.Errorf("restarted worker 1 continues at %d, want 5", iter)
	}
}
