package commbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"dsgd/comm/transport"
	"dsgd/comm/transport/mpi"
	"dsgd/comm/transport/tcp"
)

// ChildCommand is the command line under which this executable runs one
// rank of a group (see ChildArgs): the program's main must route
// "bench-comm --child SPEC" to RunChild.
var ChildCommand = []string{"bench-comm", "--child"}

// ChildArgs are the arguments that make this executable one rank of a
// group with spec (a JSON commChild).
func ChildArgs(spec string) []string {
	return append(append([]string(nil), ChildCommand...), spec)
}

// RunChild is one rank of a TCP group: join, run the job, print
// one JSON line per size.
func RunChild(ctx context.Context, spec string, stdout io.Writer) error {
	c, err := decodeCommChild(spec)
	if err != nil {
		return err
	}
	if c.Transport == "mpi" {
		return runMPIChild(ctx, c)
	}
	if c.WatchStdin {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			fmt.Fprintf(os.Stderr, "dsgd bench-comm: rank %d: the parent has gone (stdin closed); exiting\n", c.Rank)
			os.Exit(3)
		}()
	}
	ctx, cancel := context.WithTimeout(ctx, c.Deadline)
	defer cancel()
	ep, err := tcp.Connect(ctx, tcp.Config{Rank: c.Rank, Size: c.World, Rendezvous: c.Rendezvous, Token: c.Token, Timeout: c.CommTimeout, Shm: shmMode(c.Shm)})
	if err != nil {
		return fmt.Errorf("rank %d of %d: %w", c.Rank, c.World, err)
	}
	defer ep.Close()
	enc := json.NewEncoder(stdout)
	if err := benchCommRank(ctx, ep, c.commJob, func(r commResult) error { return enc.Encode(r) }); err != nil {
		return fmt.Errorf("rank %d of %d: %w", c.Rank, c.World, err)
	}
	return nil
}

// runMPIChild is one rank of an MPI group: join MPI_COMM_WORLD,
// run the job, write one JSON line per size to OutDir/rank-R.jsonl. A
// failed rank exits without MPI_Finalize, so mpirun stops the others.
func runMPIChild(ctx context.Context, c commChild) error {
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

// shmMode is the tcp transport's shared-memory setting of a bench-comm
// child: the tcp column measures loopback TCP with shared memory off,
// the shm column the same ranks with it on.
func shmMode(on bool) tcp.Shm {
	if on {
		return tcp.ShmAuto
	}
	return tcp.ShmOff
}
