//go:build linux

package collective

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/comm/transport"
)

// sharedGroup is hostGroup with the groups' shared buffers made in a
// directory of the test's, so that a test can see nothing is left.
func sharedGroup(t *testing.T, p int) ([]transport.Endpoint, string) {
	t.Helper()
	eps := hostGroup(t, p, 256)
	dir := t.TempDir()
	for _, ep := range eps {
		ep.(hostEndpoint).g.Dir = dir
	}
	return eps, dir
}

// TestHostSharedMatchesSchedules: over buffers from Executor.Buffer the
// group allreduce reads and writes the peers' buffers in place and
// gives, bitwise, the message schedules' sums, for every algorithm and
// group size, for the whole buffer and for the same part of it on every
// rank; nothing is left in the segment directory.
func TestHostSharedMatchesSchedules(t *testing.T) {
	for _, p := range []int{2, 3, 4, 5, 8} {
		for _, n := range []int{1, 3, 1000, 3*sharedBlock + 17} {
			for _, alg := range []Algorithm{Ring, Tree, RecursiveDoubling, Auto} {
				for _, at := range []int{0, 5} {
					what := fmt.Sprintf("p=%d n=%d %v at %d", p, n, alg, at)
					data, want := scheduleSums(t, what, uint64(11*p+n), p, n, alg)
					got := clone(data)
					eps, dir := sharedGroup(t, p)
					checkNoErrors(t, what+" shared", runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
						b, err := ex.Buffer(ctx, at+n)
						if err != nil {
							return err
						}
						if ok, err := ex.Shared(b); !ok {
							return fmt.Errorf("buffer not shared (%v)", err)
						}
						buf := b[at : at+n]
						for range 2 { // the second reuses the buffers
							copy(buf, data[r])
							if err := ex.Allreduce(ctx, buf, alg); err != nil {
								return err
							}
						}
						copy(got[r], buf)
						return nil
					}))
					for r := range p {
						for i := range want[r] {
							if math.Float32bits(got[r][i]) != math.Float32bits(want[r][i]) {
								t.Fatalf("%s: rank %d element %d = %v, the schedule's is %v", what, r, i, got[r][i], want[r][i])
							}
						}
					}
					if left, _ := os.ReadDir(dir); len(left) != 0 {
						t.Fatalf("%s: %d files left in the segment directory: %s", what, len(left), left[0].Name())
					}
					if sent, recv, _ := eps[0].(hostEndpoint).g.Traffic(); n >= p && (sent == 0 || recv == 0) {
						t.Errorf("%s: traffic %d sent, %d received", what, sent, recv)
					}
				}
			}
		}
	}
}

// TestHostSharedMixed: when one rank's buffer is its own memory and the
// others' are shared, every rank goes through the slots, and the sums
// are still the schedule's.
func TestHostSharedMixed(t *testing.T) {
	const p, n = 3, 5000
	data := randomData(5, p, n)
	want := clone(data)
	checkNoErrors(t, "messages", runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
		return ex.Allreduce(ctx, want[r], Ring)
	}))
	got := clone(data)
	eps, _ := sharedGroup(t, p)
	checkNoErrors(t, "mixed", runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
		b, err := ex.Buffer(ctx, n)
		if err != nil {
			return err
		}
		if r == 1 {
			b = got[r]
		}
		copy(b, data[r])
		if err := ex.Allreduce(ctx, b, Ring); err != nil {
			return err
		}
		copy(got[r], b)
		return nil
	}))
	for r := range p {
		for i := range want[r] {
			if math.Float32bits(got[r][i]) != math.Float32bits(want[r][i]) {
				t.Fatalf("rank %d element %d = %v, the schedule's is %v", r, i, got[r][i], want[r][i])
			}
		}
	}
}

// TestHostSharedFallback: a rank that cannot make its segment leaves
// every rank with ordinary memory, no error, and the reason naming that
// rank; the group goes on working.
func TestHostSharedFallback(t *testing.T) {
	const p, n = 3, 1000
	eps, dir := sharedGroup(t, p)
	eps[2].(hostEndpoint).g.Dir = filepath.Join(dir, "missing")
	checkNoErrors(t, "fallback", runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
		b, err := ex.Buffer(ctx, n)
		if err != nil {
			return err
		}
		ok, why := ex.Shared(b)
		if ok || why == nil || !strings.Contains(why.Error(), "rank 2") || !strings.Contains(why.Error(), "missing") {
			return fmt.Errorf("shared %v (%v), want a private buffer and rank 2's reason", ok, why)
		}
		for i := range b {
			b[i] = float32(r + 1)
		}
		if err := ex.Allreduce(ctx, b, Ring); err != nil {
			return err
		}
		if b[0] != 6 || b[n-1] != 6 {
			return fmt.Errorf("sum %v, want 6", b[0])
		}
		return nil
	}))
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("%d files left in the segment directory: %s", len(left), left[0].Name())
	}
}

// TestHostSharedCancel: a rank whose context has ended fails with it,
// the others fail naming it, over shared buffers too.
func TestHostSharedCancel(t *testing.T) {
	eps, _ := sharedGroup(t, 3)
	errs := runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
		b, err := ex.Buffer(ctx, 100000)
		if err != nil {
			return err
		}
		if err := ex.Allreduce(ctx, b, Ring); err != nil {
			return err
		}
		if r == 1 {
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		return ex.Allreduce(ctx, b, Ring)
	})
	checkCancelled(t, errs)
}

// TestHostSharedDoesNotAllocate: a steady loop of allreduces over a
// shared buffer allocates nothing.
func TestHostSharedDoesNotAllocate(t *testing.T) {
	eps, _ := sharedGroup(t, 2)
	ctx := context.Background()
	exs := []*Executor{NewExecutor(eps[0]), NewExecutor(eps[1])}
	bufs := make([][]float32, 2)
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			var err error
			bufs[r], err = exs[r].Buffer(ctx, 50000)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	checkSteadyAllocs(t, exs, bufs)
}
