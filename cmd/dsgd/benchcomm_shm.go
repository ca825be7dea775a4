package main

import (
	"context"
	"fmt"
	"io"

	"dsgd/transport/tcp"
)

// shmMode is the tcp transport's shared-memory setting of a bench-comm
// child: the tcp column measures loopback TCP with shared memory off,
// the shm column the same ranks with it on.
func shmMode(on bool) tcp.Shm {
	if on {
		return tcp.ShmAuto
	}
	return tcp.ShmOff
}

// shmNote explains the shm columns of the allreduce table.
const shmNote = "shm = ours over tcp with shared memory on (the same processes; ranks on one host exchange data through /dev/shm rings, TCP only for control); the tcp columns have it off (--shm off)"

// benchCommShm runs the allreduce job over the tcp transport with
// shared memory on, one process per rank, and returns its statistics.
func benchCommShm(ctx context.Context, o *benchCommOpts, world int, job commJob, stderr io.Writer) (map[commKey]commStat, error) {
	fmt.Fprintf(stderr, "bench-comm: allreduce over tcp with shared memory, %d processes...\n", world)
	res, err := runTCPGroup(ctx, o, world, job, func(c *commChild) { c.Shm = true })
	if err != nil {
		return nil, fmt.Errorf("shm: %w", err)
	}
	st, err := aggregateComm(res, world)
	if err != nil {
		return nil, fmt.Errorf("shm allreduce, %d processes: %w", world, err)
	}
	return st, nil
}
