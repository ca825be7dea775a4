package main

import (
	"fmt"
	"io"
	"time"

	"dsgd/comm/transport"
)

const shmUsage = "with --transport tcp (and dsgd worker): on, ranks that share a host exchange data through shared memory (/dev/shm) and only ranks on different hosts over TCP; off, every pair over TCP"

// printLinks prints, after a worker's time split, what each kind of link
// of its endpoint carried: one line per kind (shm, tcp) that reaches at
// least one peer,
//
//	link shm (rank 0): 1 peer(s), sent 12.345 MB, received 12.345 MB, busy 53.2 ms (0.532 ms/iter)
//
// with MB = 1e6 bytes of payload, and busy the time its sends and
// receives took (waits for the peer included; concurrent calls each
// count). Nothing is printed for an in-process run.
func printLinks(w io.Writer, ep transport.Endpoint, iters int) {
	if ep == nil {
		return
	}
	for _, l := range transport.Links(ep) {
		busy := float64(l.Busy) / float64(time.Millisecond)
		per := ""
		if iters > 0 {
			per = fmt.Sprintf(" (%.3f ms/iter)", busy/float64(iters))
		}
		fmt.Fprintf(w, "link %s (rank %d): %d peer(s), sent %.3f MB, received %.3f MB, busy %.1f ms%s\n",
			l.Kind, ep.Rank(), l.Peers, float64(l.BytesSent)/1e6, float64(l.BytesRecv)/1e6, busy, per)
	}
}

const smbShmUsage = "on: the buffers live in shared memory (/dev/shm, unlinked at once) and clients on this host map them, reading and writing by one memory copy with only the locking over TCP, as ShmCaffe's SMB; off: every byte over TCP"
