package commbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// arCell is one path's allreduce of one size on one group.
type arCell struct {
	Med float64 // seconds: median over reps of the max over ranks
	Alg string  // the algorithm that ran, where the path says
	OK  bool    // the result checked out
}

// arPath is one column of bench-comm's allreduce table: a way to run an
// allreduce on a group of world ranks. A new transport is one more entry
// in arPaths.
type arPath struct {
	col  string // the column's header and its --paths name
	desc string // the legend's line
	// best: dsgd's own, across processes (it competes for the "best"
	// column, which the peers are compared with).
	best bool
	peer bool // a peer engine: its failure is reported at the end, after ours
	// run measures sizes on world ranks. A non-empty skip says why the
	// column stays empty (not installed, switched off); err is a failure.
	run func(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (cells map[int64]arCell, skip string, err error)
}

// arPaths are the allreduce table's columns, in order.
var arPaths = []arPath{
	{col: "tcp", desc: "ours: one process per rank over loopback TCP (shared memory off)", best: true, run: runTCPPath},
	{col: "shm", desc: "ours: the tcp column's processes with shared memory on (ranks on one host exchange data through /dev/shm, TCP for control only); buffers from Executor.Buffer, as train's gradients, which the ranks reduce in place", best: true, run: runShmPath(false)},
	{col: "shm-own", desc: "ours: the shm column with each rank's buffer in its own memory (any slice: copied through the host group's slots)", best: true, run: runShmPath(true)},
	{col: "inproc", desc: "ours: goroutines in one process (transport.NewInproc), sizes up to --inproc-max", run: runInprocPath},
	{col: "mpi", desc: "ours: dsgd's schedules over MPI messages (comm/transport/mpi, mpirun)", best: true, run: runMPIPath(false)},
	{col: "mpi-own", desc: "ours: MPI_Allreduce through comm/transport/mpi (--allreduce mpi, mpirun)", best: true, run: runMPIPath(true)},
	{col: "ompi", desc: "peer: Open MPI's MPI_Allreduce from Python (mpi4py), --mpi-peer", peer: true, run: runOMPIPeer},
	{col: "gloo", desc: "peer: PyTorch's gloo over loopback, --peer", peer: true, run: runGlooPeer},
}

// PathNames lists the columns, for --paths.
func PathNames() string {
	var names []string
	for _, p := range arPaths {
		names = append(names, p.col)
	}
	return strings.Join(names, ",")
}

// cellsOf turns a group's results into cells by size.
func cellsOf(results []commResult, world int) (map[int64]arCell, error) {
	stats, err := aggregateComm(results, world)
	if err != nil {
		return nil, err
	}
	cells := map[int64]arCell{}
	for k, s := range stats {
		cells[k.bytes] = arCell{Med: s.Med, Alg: s.Alg, OK: s.OK}
	}
	return cells, nil
}

func allreduceJob(o *Options, sizes []int64) commJob {
	return commJob{Task: taskAllreduce, Sizes: sizes, Alg: o.Alg.String(), Reps: o.Reps, Warmup: o.Warmup}
}

func runTCPPath(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	res, err := runTCPGroup(ctx, o, world, allreduceJob(o, sizes), nil)
	if err != nil {
		return nil, "", err
	}
	cells, err := cellsOf(res, world)
	return cells, "", err
}

// runShmPath is the shm column: the tcp column's processes with shared
// memory on, so ranks on this host exchange their data through /dev/shm
// rings and keep TCP only for control.
// With own, each rank's buffer is its own memory instead of
// Executor.Buffer's.
func runShmPath(own bool) func(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	return func(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
		job := allreduceJob(o, sizes)
		job.OwnBuf = own
		res, err := runTCPGroup(ctx, o, world, job, func(c *commChild) { c.Shm = true })
		if err != nil {
			return nil, "", fmt.Errorf("shm: %w", err)
		}
		cells, err := cellsOf(res, world)
		return cells, "", err
	}
}

func runInprocPath(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	var small []int64
	for _, b := range sizes {
		if b <= o.InprocMax {
			small = append(small, b)
		}
	}
	if len(small) == 0 {
		return nil, "every size is above --inproc-max", nil
	}
	res, err := runInprocGroup(ctx, world, allreduceJob(o, small), o.Timeout)
	if err != nil {
		return nil, "", err
	}
	cells, err := cellsOf(res, world)
	return cells, "", err
}

func runGlooPeer(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	if o.Peer == "none" {
		return nil, "--peer none", nil
	}
	one := *o
	one.Worlds, one.Sizes = []int{world}, sizes
	rows, header, noTorch, err := runPeer(ctx, &one)
	if err != nil || noTorch != "" {
		return nil, noTorch, err
	}
	cells := map[int64]arCell{}
	for k, r := range rows {
		cells[k[1]] = arCell{Med: r.Med, OK: r.OK}
	}
	o.glooHeader = header
	return cells, "", nil
}

// runMPIPath is the mpi column (dsgd's schedules over MPI messages) or,
// with native, the mpi-own one (MPI's own collectives through the same
// transport): world ranks of this executable under mpirun, each writing
// its results to a file of its own.
func runMPIPath(native bool) func(context.Context, *Options, int, []int64, io.Writer) (map[int64]arCell, string, error) {
	return func(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, "", fmt.Errorf("cannot find this program to start the ranks: %w", err)
		}
		dir, err := os.MkdirTemp("", "dsgd-bench-mpi-")
		if err != nil {
			return nil, "", err
		}
		defer os.RemoveAll(dir)
		spec, err := json.Marshal(commChild{commJob: allreduceJob(o, sizes), World: world, Transport: "mpi", Native: native,
			OutDir: dir, CommTimeout: o.CommWait, Deadline: o.Timeout})
		if err != nil {
			return nil, "", err
		}
		ctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		cmd, skip := mpirunCommand(ctx, world, append([]string{exe}, ChildArgs(string(spec))...)...)
		if cmd == nil {
			return nil, skip, nil
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				err = fmt.Errorf("%w (past --timeout %v)", err, o.Timeout)
			}
			return nil, "", fmt.Errorf("mpirun -np %d: %w\n%s", world, err, truncate(strings.TrimSpace(string(out)), 3000))
		}
		var results []commResult
		for r := range world {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d.jsonl", r)))
			if err != nil {
				return nil, "", fmt.Errorf("rank %d's results: %w", r, err)
			}
			for _, line := range bytes.Split(b, []byte("\n")) {
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				res, err := decodeCommResult(line)
				if err != nil {
					return nil, "", fmt.Errorf("rank %d: %w", r, err)
				}
				if res.Rank != r {
					return nil, "", fmt.Errorf("rank %d's file holds rank %d's results", r, res.Rank)
				}
				results = append(results, res)
			}
		}
		cells, err := cellsOf(results, world)
		if native {
			for b, c := range cells {
				c.Alg = "" // MPI chose; the alg column is dsgd's
				cells[b] = c
			}
		}
		return cells, "", err
	}
}

// allreduceTable runs every chosen path on every world and returns the
// allreduce table: bus bandwidth per path, the best of ours across
// processes, and its ratio to each peer; then the times.
func allreduceTable(ctx context.Context, o *Options, stderr io.Writer, peerErr *error) (Section, error) {
	type key struct {
		path, world int
	}
	cells := map[key]map[int64]arCell{}
	var notes []string
	var paths []arPath
	for _, p := range arPaths {
		if o.Paths[p.col] {
			paths = append(paths, p)
		}
	}
	for _, w := range o.Worlds {
		for i, p := range paths {
			fmt.Fprintf(stderr, "bench-comm: allreduce, %s, %d ranks...\n", p.col, w)
			c, skip, err := p.run(ctx, o, w, o.Sizes, stderr)
			switch {
			case err != nil && p.peer:
				if *peerErr == nil {
					*peerErr = fmt.Errorf("%s, %d ranks: %w", p.col, w, err)
				}
				notes = append(notes, fmt.Sprintf("%s, %d ranks: FAILED (see the error at the end)", p.col, w))
			case err != nil:
				return Section{}, fmt.Errorf("allreduce over %s, %d ranks: %w", p.col, w, err)
			case skip != "":
				notes = append(notes, fmt.Sprintf("%s, %d ranks: not run: %s", p.col, w, skip))
			}
			cells[key{i, w}] = c
		}
	}
	lines := []string{"", fmt.Sprintf("allreduce (float32 sum), alg %v for dsgd's schedules (the alg column: what tcp ran)", o.Alg)}
	for _, p := range paths {
		lines = append(lines, fmt.Sprintf("  %-8s %s", p.col, p.desc))
	}
	if o.glooHeader != "" {
		lines = append(lines, fmt.Sprintf("  gloo: %s", o.glooHeader))
	}
	for _, n := range notes {
		lines = append(lines, fmt.Sprintf("  note: %s", n))
	}
	lines = append(lines, fmt.Sprintf("time: median over %d reps (after %d warm-up) of the max over ranks, each rep after a barrier (the ompi peer: 10 reps after 2)", o.Reps, o.Warmup),
		fmt.Sprintf("bus bandwidth, GB/s: 2(p-1)/p * bytes / time; best = the fastest of ours across processes (%s); best/PEER above 1: ours faster", strings.Join(bestNames(paths), ", ")))
	head := []string{"world", "MiB", "alg"}
	for _, p := range paths {
		head = append(head, p.col)
	}
	head = append(head, "best")
	var peers []arPath
	for _, p := range paths {
		if p.peer {
			peers = append(peers, p)
			head = append(head, "best/"+p.col)
		}
	}
	head = append(head, "ok")
	var rows [][]string
	var times [][]string
	for _, w := range o.Worlds {
		for _, b := range o.Sizes {
			row := []string{fmt.Sprint(w), FmtMiB(b), "-"}
			trow := []string{fmt.Sprint(w), FmtMiB(b), "-"}
			ok := true
			bestBW, bestCol := 0.0, ""
			bw := map[string]float64{}
			for i, p := range paths {
				c, found := cells[key{i, w}][b]
				if !found {
					row, trow = append(row, "-"), append(trow, "-")
					continue
				}
				if c.Alg != "" && row[2] == "-" {
					row[2], trow[2] = c.Alg, c.Alg
				}
				v := busBW(w, b, c.Med)
				bw[p.col] = v
				row = append(row, fmt.Sprintf("%.3f", v))
				trow = append(trow, fmt.Sprintf("%.3f", c.Med*1e3))
				ok = ok && c.OK
				if p.best && v > bestBW {
					bestBW, bestCol = v, p.col
				}
			}
			if bestCol == "" {
				row = append(row, "-")
			} else {
				row = append(row, bestCol)
			}
			for _, p := range peers {
				if v, found := bw[p.col]; found && bestBW > 0 {
					row = append(row, fmt.Sprintf("%.2f", bestBW/v))
				} else {
					row = append(row, "-")
				}
			}
			okText := "ok"
			if !ok {
				okText = "BAD"
			}
			rows = append(rows, append(row, okText))
			times = append(times, trow)
		}
	}
	return Section{Part: "allreduce", Blocks: []Block{
		{Lines: lines, Table: &Table{Cols: fitCols(head), Rows: rows}},
		{Lines: []string{"", "allreduce time, ms (same runs)"}, Table: &Table{Cols: fitCols(head[:3+len(paths)]), Rows: times}},
	}}, nil
}

func bestNames(paths []arPath) []string {
	var out []string
	for _, p := range paths {
		if p.best {
			out = append(out, p.col)
		}
	}
	return out
}

// fitCols are columns named head, each as wide as its widest cell,
// aligned right.
func fitCols(head []string) []Col {
	cols := make([]Col, len(head))
	for i, h := range head {
		cols[i] = Col{Name: h}
	}
	return cols
}

// ParsePaths checks --paths against arPaths.
func ParsePaths(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.ContainsFunc(arPaths, func(a arPath) bool { return a.col == p }) {
			return nil, fmt.Errorf("unknown path %q (choose from %s)", p, PathNames())
		}
		out[p] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no path chosen (choose from %s)", PathNames())
	}
	return out, nil
}
