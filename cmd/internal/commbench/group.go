package commbench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"dsgd/comm/transport"
	"dsgd/internal/spawn"
)

// runInprocGroup runs job on world goroutines joined by transport.NewInproc.
func runInprocGroup(ctx context.Context, world int, job commJob, timeout time.Duration) ([]commResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	eps := transport.NewInproc(world)
	var (
		mu      sync.Mutex
		results []commResult
		errs    = make([]error, world)
		wg      sync.WaitGroup
	)
	for r := range world {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer eps[r].Close()
			errs[r] = benchCommRank(ctx, eps[r], job, func(res commResult) error {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, res)
				return nil
			})
		}()
	}
	wg.Wait()
	debug.FreeOSMemory()
	if err := firstRankError(errs); err != nil {
		return nil, fmt.Errorf("in-process %s, %d ranks: %w", job.Task, world, err)
	}
	return results, nil
}

// firstRankError picks the error to show from a failed group: the first
// that is not a consequence of another rank's failure, else the first.
func firstRankError(errs []error) error {
	var first error
	for r, err := range errs {
		if err == nil {
			continue
		}
		err = fmt.Errorf("rank %d: %w", r, err)
		var pe *transport.PeerError
		if !errors.As(err, &pe) && !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// runTCPGroup runs job on world child processes of this executable joined
// over loopback TCP, and collects their results. The group is bounded by
// o.Timeout; when one child fails the others get two seconds to report
// their own view, then all are killed (spawn's group). It returns only once every child
// has been waited for. tweak, if not nil, edits each child's spec (tests
// use it to make one fail).
func runTCPGroup(ctx context.Context, o *Options, world int, job commJob, tweak func(*commChild)) ([]commResult, error) {
	addrs, err := spawn.LoopbackAddrs(1)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	outs, errbs := make([]bytes.Buffer, world), make([]bytes.Buffer, world)
	procs := make([]spawn.Proc, world)
	env := append(os.Environ(), "DSGD_CHILD=1")
	for r := range world {
		c := commChild{commJob: job, Rank: r, World: world, Rendezvous: addrs[0], Token: hex.EncodeToString(tok),
			CommTimeout: o.CommWait, Deadline: o.Timeout, WatchStdin: true}
		if tweak != nil {
			tweak(&c)
		}
		spec, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		// The child reads its stdin until end of file: the group holds
		// the write end open until the child exits, so if we die the
		// child follows.
		procs[r] = spawn.Proc{Name: fmt.Sprintf("rank %d", r), Args: ChildArgs(string(spec)), Env: env,
			Stdout: &outs[r], Stderr: &errbs[r], HoldStdin: true}
	}
	g, err := spawn.Start(ctx, procs, spawn.Options{Linger: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	exits := g.Wait()
	if spawn.Failed(exits) {
		// Prefer a rank that failed on its own over one the group stopped.
		var msgs []string
		var errs []error
		for r, e := range exits {
			if e.Err == nil {
				errs = append(errs, nil)
				continue
			}
			text := strings.TrimSpace(errbs[r].String())
			if text == "" {
				text = e.Err.Error()
			}
			if ctx.Err() == context.DeadlineExceeded {
				text += fmt.Sprintf(" (the group ran past --timeout %v)", o.Timeout)
			}
			errs = append(errs, errors.New(text))
			if !e.Stopped {
				msgs = append(msgs, fmt.Sprintf("rank %d: %s", r, text))
			}
		}
		if len(msgs) == 0 {
			msgs = append(msgs, firstRankError(errs).Error())
		}
		return nil, fmt.Errorf("tcp %s, %d processes: %s", job.Task, world, strings.Join(msgs, "\n"))
	}
	var results []commResult
	for r := range outs {
		sc := bufio.NewScanner(&outs[r])
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			res, err := decodeCommResult(sc.Bytes())
			if err != nil {
				return nil, fmt.Errorf("tcp %s: rank %d: %w", job.Task, r, err)
			}
			if res.Rank != r {
				return nil, fmt.Errorf("tcp %s: process %d reported rank %d", job.Task, r, res.Rank)
			}
			results = append(results, res)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("tcp %s: rank %d's output: %w", job.Task, r, err)
		}
	}
	return results, nil
}

// commStat summarises one task and size over a group.
type commStat struct {
	Alg   string
	Med   float64 // seconds: median over reps of the max over ranks
	R0Med float64 // seconds: median of rank 0's own times
	Min   float64 // seconds: fastest rep (max over ranks)
	OK    bool
}

type commKey struct {
	task  string
	bytes int64
}

// aggregateComm groups results by task and size; every one of world ranks
// must have reported the same number of repetitions.
func aggregateComm(results []commResult, world int) (map[commKey]commStat, error) {
	byKey := map[commKey][]*commResult{}
	for i := range results {
		r := &results[i]
		if r.Rank < 0 || r.Rank >= world {
			return nil, fmt.Errorf("result from rank %d in a group of %d", r.Rank, world)
		}
		k := commKey{r.Task, r.Bytes}
		if byKey[k] == nil {
			byKey[k] = make([]*commResult, world)
		}
		if byKey[k][r.Rank] != nil {
			return nil, fmt.Errorf("%s %d bytes: rank %d reported twice", r.Task, r.Bytes, r.Rank)
		}
		byKey[k][r.Rank] = r
	}
	out := map[commKey]commStat{}
	for k, ranks := range byKey {
		reps := -1
		st := commStat{OK: true}
		for r, res := range ranks {
			if res == nil {
				return nil, fmt.Errorf("%s %d bytes: rank %d did not report", k.task, k.bytes, r)
			}
			if reps >= 0 && len(res.Times) != reps {
				return nil, fmt.Errorf("%s %d bytes: rank %d reported %d reps, rank 0 %d", k.task, k.bytes, r, len(res.Times), reps)
			}
			reps = len(res.Times)
			st.OK = st.OK && res.OK
		}
		perRep := make([]float64, reps)
		for _, res := range ranks {
			for i, t := range res.Times {
				perRep[i] = max(perRep[i], t)
			}
		}
		st.Alg = ranks[0].Alg
		st.Med = medianF64(perRep)
		st.R0Med = medianF64(ranks[0].Times)
		st.Min = slices.Min(perRep)
		out[k] = st
	}
	return out, nil
}

// medianF64 is the median (the mean of the middle two for an even count),
// as numpy's; NaN for none.
func medianF64(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// busBW is the allreduce bus bandwidth in GB/s: 2(p-1)/p · bytes / time.
func busBW(world int, bytes int64, seconds float64) float64 {
	return 2 * float64(world-1) / float64(world) * float64(bytes) / seconds / 1e9
}
