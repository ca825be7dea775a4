package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"dsgd/transport"
	"dsgd/transport/mpi"
)

// mpirunCommand runs argv as np ranks under Open MPI's mpirun on this
// host, bounded by ctx: --oversubscribe (more ranks than cores is what
// this benchmark runs), root allowed (in the flags and the ranks'
// environment), never ssh. ctx's end stops mpirun with SIGTERM, which
// stops its ranks. Our MPI ranks and the Open MPI peer get the same.
func mpirunCommand(ctx context.Context, np int, argv ...string) (*exec.Cmd, string) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		return nil, "mpirun not found (apt-get install openmpi-bin)"
	}
	args := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np)}, argv...)
	cmd := exec.CommandContext(ctx, mpirun, args...)
	cmd.Env = append(os.Environ(), "DSGD_CHILD=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_plm_rsh_agent=false")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd, ""
}

// runMPIPath is the mpi column (dsgd's schedules over MPI messages) or,
// with native, the mpi-own one (MPI's own collectives through the same
// transport): world ranks of this executable under mpirun, each writing
// its results to a file of its own.
func runMPIPath(native bool) func(context.Context, *benchCommOpts, int, []int64, io.Writer) (map[int64]arCell, string, error) {
	return func(ctx context.Context, o *benchCommOpts, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
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
			OutDir: dir, CommTimeout: o.commWait, Deadline: o.timeout})
		if err != nil {
			return nil, "", err
		}
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		cmd, skip := mpirunCommand(ctx, world, exe, "bench-comm", "--child", string(spec))
		if cmd == nil {
			return nil, skip, nil
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			if ctx.Err() == context.DeadlineExceeded {
				err = fmt.Errorf("%w (past --timeout %v)", err, o.timeout)
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

// runBenchCommMPIChild is one rank of an MPI group: join MPI_COMM_WORLD,
// run the job, write one JSON line per size to OutDir/rank-R.jsonl. A
// failed rank exits without MPI_Finalize, so mpirun stops the others.
func runBenchCommMPIChild(ctx context.Context, c commChild) error {
	ctx, cancel := context.WithTimeout(ctx, c.Deadline)
	defer cancel()
	ep, err := mpi.World()
	if err != nil {
		return err
	}
	if ep.Size() != c.World {
		return fmt.Errorf("MPI made a world of %d, the parent asked for %d", ep.Size(), c.World)
	}
	var tep transport.Endpoint = ep
	if c.Native {
		if tep, err = mpi.Native(ep); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(c.OutDir, fmt.Sprintf("rank-%d.jsonl", ep.Rank())))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	err = benchCommRank(ctx, tep, c.commJob, func(r commResult) error { return enc.Encode(r) })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rank %d of %d (MPI): %w", ep.Rank(), ep.Size(), err)
	}
	ep.Close()
	return mpi.Finalize()
}

// ompiLine is a line of mpi_allreduce.py's output.
var ompiLine = regexp.MustCompile(`^mpi p=(\d+) ([0-9.eE+-]+) MiB: ([0-9.eE+-]+) ms\s+busbw ([0-9.eE+-]+) GB/s$`)

// parseOMPIPeer reads mpi_allreduce.py's lines into cells by size; a line
// that starts like one but does not parse is an error naming it.
func parseOMPIPeer(r io.Reader, world int, sizes []int64) (map[int64]arCell, error) {
	cells := map[int64]arCell{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(text, "mpi p=") {
			continue
		}
		m := ompiLine.FindStringSubmatch(text)
		if m == nil {
			return nil, fmt.Errorf("peer line %q: not \"mpi p=P MIB MiB: T ms  busbw B GB/s\"", text)
		}
		p, _ := strconv.Atoi(m[1])
		mib, err1 := strconv.ParseFloat(m[2], 64)
		ms, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil || !(ms > 0) || p != world {
			return nil, fmt.Errorf("peer line %q: world %d, %v MiB, %v ms", text, p, m[2], m[3])
		}
		nb := int64(mib*(1<<20)/4) * 4
		found := false
		for _, b := range sizes {
			if b == nb {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("peer line %q: a size that was not asked for", text)
		}
		cells[nb] = arCell{Med: ms / 1e3, OK: true} // the script asserts its sum
	}
	return cells, sc.Err()
}

// runOMPIPeer is the ompi column: Open MPI's own MPI_Allreduce from
// Python (../shared/peer/mpi_allreduce.py through mpi4py) under the same
// mpirun flags as ours.
func runOMPIPeer(ctx context.Context, o *benchCommOpts, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	if o.mpiPeer == "none" {
		return nil, "--mpi-peer none", nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, o.python, "-c", "import mpi4py").CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("%s cannot import mpi4py (apt-get install python3-mpi4py): %s", o.python, strings.TrimSpace(truncate(string(out), 200))), nil
	}
	argv := []string{o.python, o.mpiPeer}
	for _, b := range sizes {
		argv = append(argv, fmtMiB(b))
	}
	cmd, skip := mpirunCommand(ctx, world, argv...)
	if cmd == nil {
		return nil, skip, nil
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, "", fmt.Errorf("mpirun -np %d %s: %w\n%s", world, strings.Join(argv, " "), err, truncate(strings.TrimSpace(string(out)), 3000))
	}
	cells, err := parseOMPIPeer(bytes.NewReader(out), world, sizes)
	if err != nil {
		return nil, "", err
	}
	if len(cells) != len(sizes) {
		return nil, "", fmt.Errorf("the peer reported %d of %d sizes:\n%s", len(cells), len(sizes), truncate(string(out), 3000))
	}
	return cells, "", nil
}
