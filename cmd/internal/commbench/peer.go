package commbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// peerRow is one line of the peer's table.
type peerRow struct {
	World       int
	Bytes       int64
	Med, R0Med  float64 // seconds
	AlgBW, Bus  float64 // GB/s as it printed them
	OK          bool
	TorchHeader string
}

// parsePeerAllreduce reads torch_allreduce.py's output: a header line
// "torch VERSION, gloo ..." and rows "world bytes MiB med_ms r0_ms min_ms
// algbw busbw ok". Other lines are ignored; a row that starts like one but
// does not parse is an error naming its line.
func parsePeerAllreduce(r io.Reader) (rows []peerRow, header string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "torch ") && header == "" {
			header = text
			continue
		}
		f := strings.Fields(text)
		if len(f) != 9 {
			continue
		}
		world, err1 := strconv.Atoi(f[0])
		nb, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue // the column header, or chatter
		}
		var v [6]float64
		for i := range v {
			x, err := strconv.ParseFloat(f[2+i], 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return nil, header, fmt.Errorf("peer output line %d: field %d %q is not a non-negative number: %q", line, 3+i, f[2+i], text)
			}
			v[i] = x
		}
		if world < 1 || nb <= 0 || v[1] <= 0 {
			return nil, header, fmt.Errorf("peer output line %d: world %d, %d bytes, %v ms: %q", line, world, nb, v[1], text)
		}
		rows = append(rows, peerRow{World: world, Bytes: nb, Med: v[1] / 1e3, R0Med: v[2] / 1e3, AlgBW: v[4], Bus: v[5], OK: f[8] == "True"})
	}
	if err := sc.Err(); err != nil {
		return nil, header, fmt.Errorf("peer output: %v", err)
	}
	return rows, header, nil
}

// runPeer runs the gloo peer over the worlds and sizes and returns its
// rows by (world, bytes). A Python without torch is reported through
// noTorch, not as an error.
func runPeer(ctx context.Context, o *Options) (rows map[[2]int64]peerRow, header, noTorch string, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	probe := peerCommand(ctx, o.Python, "-c", "import torch")
	if out, err := probe.CombinedOutput(); err != nil {
		return nil, "", fmt.Sprintf("%s cannot import torch (%v: %s)", o.Python, err, strings.TrimSpace(truncate(string(out), 300))), nil
	}
	args := []string{o.Peer, "--worlds"}
	for _, w := range o.Worlds {
		args = append(args, strconv.Itoa(w))
	}
	args = append(args, "--sizes-mib")
	for _, b := range o.Sizes {
		args = append(args, FmtMiB(b))
	}
	args = append(args, "--big-mib", "0", "--reps", strconv.Itoa(o.Reps), "--warmup", strconv.Itoa(o.Warmup), "--extra-bytes")
	cmd := peerCommand(ctx, o.Python, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, "", "", fmt.Errorf("peer %s %s: %w\n%s", o.Python, strings.Join(args, " "), err, truncate(out.String(), 3000))
	}
	list, header, err := parsePeerAllreduce(&out)
	if err != nil {
		return nil, "", "", err
	}
	rows = map[[2]int64]peerRow{}
	for _, r := range list {
		rows[[2]int64{int64(r.World), r.Bytes}] = r
	}
	return rows, header, "", nil
}

// peerCommand starts Python in its own process group, so that a cancelled
// run kills the workers torch.multiprocessing spawned too.
func peerCommand(ctx context.Context, python string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

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
func runOMPIPeer(ctx context.Context, o *Options, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	if o.MPIPeer == "none" {
		return nil, "--mpi-peer none", nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, o.Python, "-c", "import mpi4py").CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("%s cannot import mpi4py (apt-get install python3-mpi4py): %s", o.Python, strings.TrimSpace(truncate(string(out), 200))), nil
	}
	argv := []string{o.Python, o.MPIPeer}
	for _, b := range sizes {
		argv = append(argv, FmtMiB(b))
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
