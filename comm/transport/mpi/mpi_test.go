//go:build !purego

package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/transport"
	"dsgd/comm/transport/transporttest"
)

// spmdEnv marks a copy of this test binary that mpirun started as one rank
// of TestAcrossProcesses.
const spmdEnv = "DSGD_MPI_TEST_SPMD"

func TestMain(m *testing.M) {
	if os.Getenv(spmdEnv) == "1" {
		os.Exit(spmdMain())
	}
	code := m.Run()
	if err := Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// TestConformance runs the transport conformance suite over MPI in this
// process (MPI as a singleton, every rank an endpoint of a local group
// whose messages go through MPI's matching and progress engine).
func TestConformance(t *testing.T) {
	if err := Init(); err != nil {
		t.Skipf("MPI not available here: %v", err)
	}
	transporttest.Run(t, func(t *testing.T, size int) []transport.Endpoint {
		eps, err := NewLocalGroup(size)
		if err != nil {
			t.Fatal(err)
		}
		return eps
	})
}

// mpirunCommand returns mpirun running this test binary as np ranks of
// the SPMD checks, bounded by ctx. Root needs Open MPI's consent, given
// on the command line and in the children's environment (not relying on
// the caller's); --oversubscribe lets 4 ranks share 2 cores.
func mpirunCommand(t *testing.T, ctx context.Context, np int) *exec.Cmd {
	t.Helper()
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun not installed (Debian openmpi-bin; .ci/run installs it)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np), exe)
	cmd.Env = append(os.Environ(), spmdEnv+"=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"OMPI_MCA_plm_rsh_agent=false") // one host: never try ssh
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // mpirun stops its ranks
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// TestAcrossProcesses starts 4 MPI processes (mpirun) that check, between
// processes: every pair at once with mixed tags, kinds and lengths; a
// large message each way; a mismatch naming the sender; dsgd's collectives
// (tree, ring, recursive doubling) over the endpoint against exact sums;
// MPI's own collectives through Native; and a close seen by every peer.
func TestAcrossProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const np = 4
	cmd := mpirunCommand(t, ctx, np)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun -np %d: %v (context: %v)\n%s", np, err, ctx.Err(), out)
	}
	for r := range np {
		if want := fmt.Sprintf("rank %d of %d: ok", r, np); !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// spmdMain is one rank of TestAcrossProcesses.
func spmdMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rank, size, err := spmdChecks(ctx)
	if ferr := Finalize(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d of %d: FAILED: %v\n", rank, size, err)
		return 1
	}
	fmt.Printf("rank %d of %d: ok\n", rank, size)
	return 0
}

func spmdChecks(ctx context.Context) (rank, size int, err error) {
	ep, err := World()
	if err != nil {
		return -1, 0, err
	}
	rank, size = ep.Rank(), ep.Size()
	if want := os.Getenv("OMPI_COMM_WORLD_RANK"); want != strconv.Itoa(rank) {
		return rank, size, fmt.Errorf("World says rank %d, OMPI_COMM_WORLD_RANK %q", rank, want)
	}
	checks := []struct {
		name string
		f    func(context.Context, *Endpoint) error
	}{
		{"all pairs", spmdAllPairs},
		{"large", spmdLarge},
		{"collectives over the endpoint", spmdSchedules},
		{"native collectives", spmdNative},
		{"mismatch", spmdMismatch},
	}
	for _, c := range checks {
		if err := c.f(ctx, ep); err != nil {
			return rank, size, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	ep.Close()
	// A fresh communicator for the close check: rank size-1 leaves, the
	// others' receives from it fail naming it.
	ep2, err := World()
	if err != nil {
		return rank, size, err
	}
	defer ep2.Close()
	last := size - 1
	if rank == last {
		ep2.Abort(errors.New("test leaving"))
		return rank, size, nil
	}
	err = ep2.Recv(ctx, last, 0, make([]float32, 4))
	var pe *transport.PeerError
	if !errors.As(err, &pe) || pe.Rank != last || !strings.Contains(err.Error(), "test leaving") {
		return rank, size, fmt.Errorf("close: Recv from the leaving rank gave %v, want a PeerError naming rank %d with its reason", err, last)
	}
	return rank, size, nil
}

// value is message i from rank from to rank to, element j: small integers,
// so that sums are exact in float32.
func value(from, to, i, j int) float32 { return float32((from*7 + to*3 + i*5 + j) % 17) }

func spmdAllPairs(ctx context.Context, ep *Endpoint) error {
	const msgs = 20
	length := func(i int) int { return (i * 997) % 20000 }
	var wg sync.WaitGroup
	errs := make(chan error, 2*ep.Size())
	me := ep.Rank()
	for peer := range ep.Size() {
		if peer == me {
			continue
		}
		wg.Go(func() {
			for i := range msgs {
				var err error
				if i%4 == 3 {
					b := make([]byte, length(i)%700)
					for j := range b {
						b[j] = byte(value(me, peer, i, j))
					}
					err = ep.SendBytes(ctx, peer, uint32(i), b)
				} else {
					v := make([]float32, length(i))
					for j := range v {
						v[j] = value(me, peer, i, j)
					}
					err = ep.Send(ctx, peer, uint32(i), v)
				}
				if err != nil {
					errs <- fmt.Errorf("send %d to %d: %w", i, peer, err)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range msgs {
				if i%4 == 3 {
					b, err := ep.RecvBytes(ctx, peer, uint32(i), 700)
					if err != nil {
						errs <- fmt.Errorf("recv %d from %d: %w", i, peer, err)
						return
					}
					for j := range b {
						if b[j] != byte(value(peer, me, i, j)) || len(b) != length(i)%700 {
							errs <- fmt.Errorf("recv %d from %d: wrong bytes", i, peer)
							return
						}
					}
					continue
				}
				v := make([]float32, length(i))
				if err := ep.Recv(ctx, peer, uint32(i), v); err != nil {
					errs <- fmt.Errorf("recv %d from %d: %w", i, peer, err)
					return
				}
				for j := range v {
					if v[j] != value(peer, me, i, j) {
						errs <- fmt.Errorf("recv %d from %d: value %d is %g", i, peer, j, v[j])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(ch chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}

// spmdLarge: ranks 0 and 1 swap 32 MiB at once.
func spmdLarge(ctx context.Context, ep *Endpoint) error {
	if ep.Rank() > 1 {
		return nil
	}
	peer := 1 - ep.Rank()
	n := 8 << 20
	out, in := make([]float32, n), make([]float32, n)
	for j := range out {
		out[j] = value(ep.Rank(), peer, 0, j)
	}
	errc := make(chan error, 1)
	go func() { errc <- ep.Send(ctx, peer, 1, out) }()
	if err := ep.Recv(ctx, peer, 1, in); err != nil {
		return err
	}
	if err := <-errc; err != nil {
		return err
	}
	for j := range in {
		if in[j] != value(peer, ep.Rank(), 0, j) {
			return fmt.Errorf("value %d is %g", j, in[j])
		}
	}
	return nil
}

// fillRank and sumAll give each rank's contribution and the exact sum.
func fillRank(buf []float32, rank int) {
	for j := range buf {
		buf[j] = float32((rank*13 + j) % 29)
	}
}

func checkSum(buf []float32, size int) error {
	for j := range buf {
		var want float32
		for r := range size {
			want += float32((r*13 + j) % 29)
		}
		if buf[j] != want {
			return fmt.Errorf("element %d is %g, want %g", j, buf[j], want)
		}
	}
	return nil
}

func spmdSchedules(ctx context.Context, ep *Endpoint) error {
	ex := collective.NewExecutor(ep)
	defer ex.Close()
	buf := make([]float32, 100_003)
	for _, alg := range []collective.Algorithm{collective.Tree, collective.Ring, collective.RecursiveDoubling} {
		fillRank(buf, ep.Rank())
		if err := ex.Allreduce(ctx, buf, alg); err != nil {
			return fmt.Errorf("%v: %w", alg, err)
		}
		if err := checkSum(buf, ep.Size()); err != nil {
			return fmt.Errorf("%v: %w", alg, err)
		}
	}
	return nil
}

func spmdNative(ctx context.Context, ep *Endpoint) error {
	nep, err := Native(ep)
	if err != nil {
		return err
	}
	ex := collective.NewExecutor(nep)
	defer ex.Close()
	buf := make([]float32, 100_003)
	fillRank(buf, ep.Rank())
	if err := ex.Allreduce(ctx, buf, collective.Auto); err != nil {
		return err
	}
	if err := checkSum(buf, ep.Size()); err != nil {
		return fmt.Errorf("allreduce: %w", err)
	}
	root := ep.Size() - 1
	fillRank(buf, ep.Rank())
	if err := ex.Broadcast(ctx, root, buf); err != nil {
		return err
	}
	for j := range buf {
		if buf[j] != float32((root*13+j)%29) {
			return fmt.Errorf("broadcast: element %d is %g", j, buf[j])
		}
	}
	fillRank(buf, ep.Rank())
	if err := ex.Reduce(ctx, 1, buf); err != nil {
		return err
	}
	if ep.Rank() == 1 {
		if err := checkSum(buf, ep.Size()); err != nil {
			return fmt.Errorf("reduce: %w", err)
		}
	}
	return ex.Barrier(ctx)
}

// spmdMismatch: rank 1 sends tag 5, rank 0 asks for tag 6 and gets a
// PeerError naming rank 1. Last: the pair's stream is unusable after it.
func spmdMismatch(ctx context.Context, ep *Endpoint) error {
	switch ep.Rank() {
	case 1:
		return ep.Send(ctx, 0, 5, make([]float32, 10))
	case 0:
		err := ep.Recv(ctx, 1, 6, make([]float32, 10))
		var pe *transport.PeerError
		if !errors.As(err, &pe) || pe.Rank != 1 || !strings.Contains(err.Error(), "tag 5") {
			return fmt.Errorf("got %v, want a PeerError naming rank 1 and tag 5", err)
		}
	}
	return nil
}
