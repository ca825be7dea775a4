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

// runShmPath is the shm column: the tcp column's processes with shared
// memory on, so ranks on this host exchange their data through /dev/shm
// rings and keep TCP only for control.
func runShmPath(ctx context.Context, o *benchCommOpts, world int, sizes []int64, stderr io.Writer) (map[int64]arCell, string, error) {
	res, err := runTCPGroup(ctx, o, world, allreduceJob(o, sizes), func(c *commChild) { c.Shm = true })
	if err != nil {
		return nil, "", fmt.Errorf("shm: %w", err)
	}
	cells, err := cellsOf(res, world)
	return cells, "", err
}
