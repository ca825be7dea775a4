//go:build linux

package collective

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"dsgd/comm/shm"
	"dsgd/comm/transport"
)

// hostEndpoint is an in-process endpoint that also offers a host group,
// as the tcp transport does when every rank is on one host.
type hostEndpoint struct {
	transport.Endpoint
	g *shm.Group
}

func (h hostEndpoint) HostGroup() *shm.Group { return h.g }

// hostGroup returns p in-process endpoints sharing one group whose slots
// hold slot floats, over anonymous memory (which futexes work on as on a
// segment).
func hostGroup(t *testing.T, p, slot int) []transport.Endpoint {
	t.Helper()
	mem, err := syscall.Mmap(-1, 0, shm.GroupSize(p, 4*slot), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	eps := transport.NewInproc(p)
	out := make([]transport.Endpoint, p)
	for r := range p {
		g, err := shm.NewGroup(mem, r, p, 4*slot)
		if err != nil {
			t.Fatal(err)
		}
		out[r] = hostEndpoint{eps[r], g}
	}
	return out
}

// TestHostAllreduceMatchesSchedules: the group allreduce gives, bitwise,
// the message schedules' sums for every algorithm, group size and a
// buffer of one round, several rounds, and rounds that cut chunks.
func TestHostAllreduceMatchesSchedules(t *testing.T) {
	const slot = 256
	for _, p := range []int{2, 3, 4, 5, 7, 8} {
		for _, n := range []int{1, 3, 200, slot, 1000, 4*slot + 13, 3 * evalBlock} {
			for _, alg := range []Algorithm{Ring, Tree, RecursiveDoubling, Auto} {
				what := fmt.Sprintf("p=%d n=%d %v", p, n, alg)
				data, want := scheduleSums(t, what, uint64(7*p+n), p, n, alg)
				got := clone(data)
				eps := hostGroup(t, p, slot)
				checkNoErrors(t, what+" host", runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
					if ex.host() == nil {
						return errors.New("no host group")
					}
					// Twice: the second call reuses the slots.
					copy(got[r], data[r])
					if err := ex.Allreduce(ctx, got[r], alg); err != nil {
						return err
					}
					copy(got[r], data[r])
					return ex.Allreduce(ctx, got[r], alg)
				}))
				for r := range p {
					for i := range want[r] {
						if math.Float32bits(got[r][i]) != math.Float32bits(want[r][i]) {
							t.Fatalf("%s: rank %d element %d = %v, the schedule's is %v", what, r, i, got[r][i], want[r][i])
						}
					}
				}
				if st := eps[0].(hostEndpoint).g; n >= p {
					if sent, recv, _ := st.Traffic(); sent == 0 || recv == 0 {
						t.Errorf("%s: traffic %d sent, %d received", what, sent, recv)
					}
				}
			}
		}
	}
}

// scheduleSums returns p ranks' data of n floats from seed, with
// magnitudes from 1e-4 to 1e4 (the grouping of the sums shows in the
// last bits), and their allreduce by the message schedules of alg.
func scheduleSums(t *testing.T, what string, seed uint64, p, n int, alg Algorithm) (data, want [][]float32) {
	t.Helper()
	data = randomData(seed, p, n)
	for r := range data {
		for i := range data[r] {
			data[r][i] *= float32(math.Pow(10, float64((r*3+i)%9-4)))
		}
	}
	want = clone(data)
	checkNoErrors(t, what+" messages", runGroup(t, transport.NewInproc(p), func(ctx context.Context, r int, ex *Executor) error {
		return ex.Allreduce(ctx, want[r], alg)
	}))
	return data, want
}

// TestHostOrdersDiffer: the comparison above can fail: the algorithms'
// groupings give different bits on such data.
func TestHostOrdersDiffer(t *testing.T) {
	const p, n = 5, 1000
	data := randomData(3, p, n)
	sum := func(alg Algorithm) [][]float32 {
		b := clone(data)
		checkNoErrors(t, alg.String(), runGroup(t, hostGroup(t, p, 256), func(ctx context.Context, r int, ex *Executor) error {
			return ex.Allreduce(ctx, b[r], alg)
		}))
		checkSameBits(t, alg.String(), b)
		return b
	}
	ring, tree, rd := sum(Ring), sum(Tree), sum(RecursiveDoubling)
	differ := func(a, b []float32) bool {
		for i := range a {
			if a[i] != b[i] {
				return true
			}
		}
		return false
	}
	if !differ(ring[0], tree[0]) || !differ(tree[0], rd[0]) {
		t.Fatal("ring, tree and recursive doubling sum alike: the bitwise comparison proves nothing")
	}
}

// TestHostMismatch: ranks at different collectives fail, naming the
// rank, instead of mixing their data.
func TestHostMismatch(t *testing.T) {
	eps := hostGroup(t, 3, 256)
	errs := runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
		n := 100
		if r == 2 {
			n = 101
		}
		return ex.Allreduce(ctx, make([]float32, n), Ring)
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "another collective") && !strings.Contains(err.Error(), "after a failure") {
			t.Errorf("rank %d: %v, want a mismatch", r, err)
		}
	}
}

// TestHostCancel: a rank whose context ends fails with it; the others,
// waiting for it, fail naming it, at once.
func TestHostCancel(t *testing.T) {
	eps := hostGroup(t, 3, 256)
	errs := runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
		if r == 1 {
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		if err := ex.Barrier(ctx); err != nil {
			return err
		}
		return ex.Allreduce(ctx, make([]float32, 1000), Ring)
	})
	checkCancelled(t, errs)
}

// checkCancelled checks a group of three whose rank 1 had its context
// cancelled: rank 1 fails with the cancellation, the others naming it.
func checkCancelled(t *testing.T, errs []error) {
	t.Helper()
	if !errors.Is(errs[1], context.Canceled) {
		t.Errorf("rank 1: %v, want its cancellation", errs[1])
	}
	for _, r := range []int{0, 2} {
		var re *transport.PeerError
		if !errors.As(errs[r], &re) || re.Rank != 1 {
			t.Errorf("rank %d: %v, want rank 1 named", r, errs[r])
		}
	}
}

// TestHostDoesNotAllocate: a steady loop of group allreduces allocates
// nothing.
func TestHostDoesNotAllocate(t *testing.T) {
	eps := hostGroup(t, 2, 1024)
	exs := []*Executor{NewExecutor(eps[0]), NewExecutor(eps[1])}
	checkSteadyAllocs(t, exs, [][]float32{make([]float32, 5000), make([]float32, 5000)})
}

// checkSteadyAllocs fails the test unless a loop of allreduces of bufs
// by the two ranks' executors allocates nothing on rank 0.
func checkSteadyAllocs(t *testing.T, exs []*Executor, bufs [][]float32) {
	t.Helper()
	ctx := context.Background()
	done := make(chan error)
	go func() {
		for range 102 { // rank 0: one call, then AllocsPerRun's warm-up and 100
			if err := exs[1].Allreduce(ctx, bufs[1], Ring); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if err := exs[0].Allreduce(ctx, bufs[0], Ring); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() { exs[0].Allreduce(ctx, bufs[0], Ring) }); a != 0 {
		t.Errorf("%v allocations per allreduce", a)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestHostStalledRankNamed: a rank that never comes (frozen) is named by
// the ranks whose deadline passes waiting for it.
func TestHostStalledRankNamed(t *testing.T) {
	eps := hostGroup(t, 3, 256)
	errs := runGroup(t, eps, func(ctx context.Context, r int, ex *Executor) error {
		if r == 2 {
			return nil // never calls
		}
		c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		return ex.Allreduce(c, make([]float32, 100), Ring)
	})
	deadline := false
	for _, r := range []int{0, 1} {
		var pe *transport.PeerError
		if !errors.As(errs[r], &pe) || pe.Rank != 2 {
			t.Errorf("rank %d: %v, want rank 2 named", r, errs[r])
		}
		deadline = deadline || errors.Is(errs[r], context.DeadlineExceeded)
	}
	if !deadline {
		t.Errorf("neither rank says its deadline passed: %v, %v", errs[0], errs[1])
	}
}
