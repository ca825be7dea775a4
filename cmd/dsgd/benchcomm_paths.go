package main

import (
	"context"
	"fmt"
	"io"
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
	run func(ctx context.Context, o *benchCommOpts, world int, sizes []int64, stderr io.Writer) (cells map[int64]arCell, skip string, err error)
}

// arPaths are the allreduce table's columns, in order.
var arPaths = []arPath{
	{col: "tcp", desc: "ours: one process per rank over loopback TCP (shared memory off)", best: true, run: runTCPPath},
	{col: "shm", desc: "ours: the tcp column's processes with shared memory on (ranks on one host exchange data through /dev/shm rings, TCP for control only)", best: true, run: runShmPath},
	{col: "inproc", desc: "ours: goroutines in one process (transport.NewInproc), sizes up to --inproc-max", run: runInprocPath},
	{col: "mpi", desc: "ours: dsgd's schedules over MPI messages (transport/mpi, mpirun)", best: true, run: runMPIPath(false)},
	{col: "mpi-own", desc: "ours: MPI_Allreduce through transport/mpi (--allreduce mpi, mpirun)", best: true, run: runMPIPath(true)},
	{col: "ompi", desc: "peer: Open MPI's MPI_Allreduce from Python (mpi4py), --mpi-peer", peer: true, run: runOMPIPeer},
	{col: "gloo", desc: "peer: PyTorch's gloo over loopback, --peer", peer: true, run: runGlooPeer},
}

// arPathNames lists the columns, for --paths.
func arPathNames() string {
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

func allreduceJob(o *benchCommOpts, sizes []int64) commJob {
	return commJob{Task: taskAllreduce, Sizes: sizes, Alg: o.alg.String(), Reps: o.reps, Warmup: o.warmup}
}

func runTCPPath(ctx context.Context, o *benchCommOpts, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	res, err := runTCPGroup(ctx, o, world, allreduceJob(o, sizes), nil)
	if err != nil {
		return nil, "", err
	}
	cells, err := cellsOf(res, world)
	return cells, "", err
}

func runInprocPath(ctx context.Context, o *benchCommOpts, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	var small []int64
	for _, b := range sizes {
		if b <= o.inprocMax {
			small = append(small, b)
		}
	}
	if len(small) == 0 {
		return nil, "every size is above --inproc-max", nil
	}
	res, err := runInprocGroup(ctx, world, allreduceJob(o, small), o.timeout)
	if err != nil {
		return nil, "", err
	}
	cells, err := cellsOf(res, world)
	return cells, "", err
}

func runGlooPeer(ctx context.Context, o *benchCommOpts, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	if o.peer == "none" {
		return nil, "--peer none", nil
	}
	one := *o
	one.worlds, one.sizes = []int{world}, sizes
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

// benchCommTable runs every chosen path on every world and prints the
// allreduce table: bus bandwidth per path, the best of ours across
// processes, and its ratio to each peer; then the times.
func benchCommTable(ctx context.Context, o *benchCommOpts, stdout, stderr io.Writer, peerErr *error) error {
	type key struct {
		path, world int
	}
	cells := map[key]map[int64]arCell{}
	var notes []string
	var paths []arPath
	for _, p := range arPaths {
		if o.paths[p.col] {
			paths = append(paths, p)
		}
	}
	for _, w := range o.worlds {
		for i, p := range paths {
			fmt.Fprintf(stderr, "bench-comm: allreduce, %s, %d ranks...\n", p.col, w)
			c, skip, err := p.run(ctx, o, w, o.sizes, stderr)
			switch {
			case err != nil && p.peer:
				if *peerErr == nil {
					*peerErr = fmt.Errorf("%s, %d ranks: %w", p.col, w, err)
				}
				notes = append(notes, fmt.Sprintf("%s, %d ranks: FAILED (see the error at the end)", p.col, w))
			case err != nil:
				return fmt.Errorf("allreduce over %s, %d ranks: %w", p.col, w, err)
			case skip != "":
				notes = append(notes, fmt.Sprintf("%s, %d ranks: not run: %s", p.col, w, skip))
			}
			cells[key{i, w}] = c
		}
	}
	fmt.Fprintf(stdout, "\nallreduce (float32 sum), alg %v for dsgd's schedules (the alg column: what tcp ran)\n", o.alg)
	for _, p := range paths {
		fmt.Fprintf(stdout, "  %-8s %s\n", p.col, p.desc)
	}
	if o.glooHeader != "" {
		fmt.Fprintf(stdout, "  gloo: %s\n", o.glooHeader)
	}
	for _, n := range notes {
		fmt.Fprintf(stdout, "  note: %s\n", n)
	}
	fmt.Fprintf(stdout, "time: median over %d reps (after %d warm-up) of the max over ranks, each rep after a barrier (the ompi peer: 10 reps after 2)\n", o.reps, o.warmup)
	fmt.Fprintf(stdout, "bus bandwidth, GB/s: 2(p-1)/p * bytes / time; best = the fastest of ours across processes (%s); best/PEER above 1: ours faster\n", strings.Join(bestNames(paths), ", "))
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
	for _, w := range o.worlds {
		for _, b := range o.sizes {
			row := []string{fmt.Sprint(w), fmtMiB(b), "-"}
			trow := []string{fmt.Sprint(w), fmtMiB(b), "-"}
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
	writeColumns(stdout, head, rows)
	fmt.Fprintf(stdout, "\nallreduce time, ms (same runs)\n")
	writeColumns(stdout, head[:3+len(paths)], times)
	return nil
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

// writeColumns prints rows under head, each column right-aligned to its
// widest cell.
func writeColumns(w io.Writer, head []string, rows [][]string) {
	width := make([]int, len(head))
	for i, h := range head {
		width[i] = len(h)
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	line := func(cells []string) {
		parts := make([]string, len(cells))
		for i, c := range cells {
			parts[i] = fmt.Sprintf("%*s", width[i], c)
		}
		fmt.Fprintln(w, strings.Join(parts, " "))
	}
	line(head)
	for _, r := range rows {
		line(r)
	}
}

// parsePaths checks --paths against arPaths.
func parsePaths(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.ContainsFunc(arPaths, func(a arPath) bool { return a.col == p }) {
			return nil, fmt.Errorf("unknown path %q (choose from %s)", p, arPathNames())
		}
		out[p] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no path chosen (choose from %s)", arPathNames())
	}
	return out, nil
}
