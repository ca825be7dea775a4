package tcp

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"dsgd/comm/collective"
	"dsgd/comm/transport"
)

// allreduceAll runs an allreduce of each rank's buffer on every endpoint
// at once and returns each rank's error.
func allreduceAll(eps []transport.Endpoint, bufs [][]float32, alg collective.Algorithm) []error {
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for r, ep := range eps {
		wg.Go(func() {
			ex := collective.NewExecutor(ep)
			defer ex.Close()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			if errs[r] = ex.Allreduce(ctx, bufs[r], alg); errs[r] == nil {
				errs[r] = ex.Barrier(ctx)
			}
		})
	}
	wg.Wait()
	return errs
}

func randomBufs(p, n int) [][]float32 {
	out := make([][]float32, p)
	for r := range out {
		rng := rand.New(rand.NewPCG(uint64(r), 9))
		out[r] = make([]float32, n)
		for i := range out[r] {
			out[r][i] = float32((rng.Float64()*2 - 1) * math.Pow(10, float64(i%7-3)))
		}
	}
	return out
}

// TestHostGroupAllreduce: ranks on one host get a host group; the
// collectives over it give the message schedules' sums bitwise, over
// several rounds of the slot, and its traffic shows as the group link.
// Nothing is left in the segment directory.
func TestHostGroupAllreduce(t *testing.T) {
	const p = 3
	n := 3*DefaultShmSlot/4/2 + 11 // a round and a half of the slot
	dir := t.TempDir()
	connect := func(slot int) []transport.Endpoint {
		cfgs := groupConfigs(t, p, CompressNone)
		for i := range cfgs {
			cfgs[i].ShmDir, cfgs[i].ShmSlot = dir, slot
		}
		eps, errs := connectAll(context.Background(), cfgs)
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
			t.Cleanup(func() { eps[r].Close() })
		}
		return eps
	}
	grouped, plain := connect(0), connect(-1)
	for r := range p {
		if grouped[r].(*endpoint).HostGroup() == nil {
			t.Fatalf("rank %d: no host group with every rank on this host", r)
		}
		if plain[r].(*endpoint).HostGroup() != nil {
			t.Fatalf("rank %d: a host group with ShmSlot -1", r)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in the segment directory: %s", len(left), left[0].Name())
	}
	for _, alg := range []collective.Algorithm{collective.Ring, collective.Tree, collective.RecursiveDoubling} {
		want, got := randomBufs(p, n), randomBufs(p, n)
		for r, err := range allreduceAll(plain, want, alg) {
			if err != nil {
				t.Fatalf("%v, messages: rank %d: %v", alg, r, err)
			}
		}
		for r, err := range allreduceAll(grouped, got, alg) {
			if err != nil {
				t.Fatalf("%v, host group: rank %d: %v", alg, r, err)
			}
		}
		for r := range p {
			for i := range want[r] {
				if math.Float32bits(got[r][i]) != math.Float32bits(want[r][i]) {
					t.Fatalf("%v: rank %d element %d = %v over the host group, %v as messages", alg, r, i, got[r][i], want[r][i])
				}
			}
		}
	}
	// The same through buffers in shared memory (Executor.Buffer),
	// which the ranks reduce in place.
	for _, alg := range []collective.Algorithm{collective.Ring, collective.Tree, collective.RecursiveDoubling} {
		want, got := randomBufs(p, n), randomBufs(p, n)
		for r, err := range allreduceAll(plain, want, alg) {
			if err != nil {
				t.Fatalf("%v, messages: rank %d: %v", alg, r, err)
			}
		}
		errs := make([]error, p)
		var wg sync.WaitGroup
		for r, ep := range grouped {
			wg.Go(func() {
				ex := collective.NewExecutor(ep)
				defer ex.Close()
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				b, err := ex.Buffer(ctx, n)
				if err != nil {
					errs[r] = err
					return
				}
				if ok, why := ex.Shared(b); !ok {
					errs[r] = fmt.Errorf("buffer not in shared memory (%v)", why)
					return
				}
				copy(b, got[r])
				errs[r] = ex.Allreduce(ctx, b, alg)
				copy(got[r], b)
			})
		}
		wg.Wait()
		for r := range p {
			if errs[r] != nil {
				t.Fatalf("%v, shared buffers: rank %d: %v", alg, r, errs[r])
			}
			for i := range want[r] {
				if math.Float32bits(got[r][i]) != math.Float32bits(want[r][i]) {
					t.Fatalf("%v: rank %d element %d = %v in shared buffers, %v as messages", alg, r, i, got[r][i], want[r][i])
				}
			}
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in the segment directory after Buffer: %s", len(left), left[0].Name())
	}
	for r, ep := range grouped {
		var g *transport.LinkStats
		for _, l := range transport.Links(ep) {
			if l.Kind == "group" {
				g = &l
			}
		}
		// Each allreduce: this rank wrote the others' parts and its
		// sums, n floats, for the others.
		if g == nil || g.Peers != p-1 || g.BytesSent < 3*4*int64(n) || g.BytesRecv < 3*4*int64(n) {
			t.Errorf("rank %d's group link: %+v, want at least %d bytes each way", r, g, 3*4*n)
		}
		if st := ep.Stats(); st.BytesSent < g.BytesSent {
			t.Errorf("rank %d: Stats %+v leave out the group's %d bytes", r, st, g.BytesSent)
		}
	}
}

// TestHostGroupOnlyWhenAllShare: no host group with fp16 (the messages
// round to halves), with shared memory off at one rank, or off.
func TestHostGroupOnlyWhenAllShare(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(r int, c *Config)
	}{
		{"fp16", func(_ int, c *Config) { c.Compress = CompressFP16 }},
		{"rank 2 shm off", func(r int, c *Config) {
			if r == 2 {
				c.Shm = ShmOff
			}
		}},
		{"rank 0 shm off", func(r int, c *Config) {
			if r == 0 {
				c.Shm = ShmOff
			}
		}},
		{"rank 1 no slot", func(r int, c *Config) {
			if r == 1 {
				c.ShmSlot = -1
			}
		}},
		{"rank 0 no slot", func(r int, c *Config) {
			if r == 0 {
				c.ShmSlot = -1
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := groupConfigs(t, 3, CompressNone)
			for r := range cfgs {
				tc.mod(r, &cfgs[r])
			}
			eps, errs := connectAll(context.Background(), cfgs)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
				defer eps[r].Close()
			}
			bufs := [][]float32{{1, 2}, {3, 4}, {5, 6}}
			for r, err := range allreduceAll(eps, bufs, collective.Auto) {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
				if eps[r].(*endpoint).HostGroup() != nil {
					t.Errorf("rank %d has a host group", r)
				}
				if bufs[r][0] != 9 || bufs[r][1] != 12 {
					t.Errorf("rank %d: %v, want [9 12]", r, bufs[r])
				}
			}
		})
	}
}

// TestHostGroupPeerKilled: ranks waiting in the host group for a rank
// whose process is killed fail at once, naming it, and leave nothing in
// the segment directory.
func TestHostGroupPeerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	cfgs := groupConfigs(t, 3, CompressNone)
	dir := t.TempDir()
	for i := range cfgs {
		cfgs[i].ShmDir = dir
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRank$")
	cmd.Env = append(os.Environ(), helperEnv+"="+cfgs[0].Rendezvous, helperShmEnv+"=on", helperDirEnv+"="+dir, helperIdleEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	eps, errs := connectAll(context.Background(), cfgs[:2])
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer eps[r].Close()
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "sending" {
		t.Fatalf("helper said %q", lines.Text())
	}
	for r := range 2 {
		if eps[r].(*endpoint).HostGroup() == nil {
			t.Fatalf("rank %d: no host group", r)
		}
	}
	errc := make(chan []error, 1)
	go func() {
		bufs := [][]float32{make([]float32, 1000), make([]float32, 1000)}
		errc <- allreduceAll(eps, bufs, collective.Ring)
	}()
	time.Sleep(100 * time.Millisecond) // both wait for rank 2
	start := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case errs := <-errc:
		for r, err := range errs {
			wantPeerError(t, "rank "+string(rune('0'+r)), err, 2, "connection closed")
		}
	case <-time.After(testTimeout):
		t.Fatal("ranks 0 and 1 still wait for the dead rank 2")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("failures seen after %v", d)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in the segment directory after kill -9: %v", len(left), left[0].Name())
	}
}
