// Package shm owns memory shared between the processes of one host:
// segments (files under /dev/shm, created exclusively, sized, mapped,
// unlinked), the futex wake-ups that let one process block on a word
// another process writes, a single-producer single-consumer byte ring
// over a segment, and the host identity that tells which ranks can share
// memory at all.
//
// No segment outlives its job. A segment's file exists only while its
// parties map it: the creator unlinks it as soon as every party has
// mapped it, after which the kernel frees the memory with the last
// mapping, whoever dies and however (kill -9 included). For the short
// window between creation and unlink, a segment's name carries its
// creator's pid and start time and the creator holds a shared flock on
// it; Sweep, run at start-up, removes the dsgd segments whose creator is
// dead (its lock gone, its pid gone or reused).
//
// The canonical use, between two processes on one host:
//
//	seg, err := shm.Create("", "tcp", size) // "" is DefaultDir, /dev/shm
//	// ... tell the peer seg.Path; it calls shm.Open(path, size) ...
//	// ... once the peer has said it mapped the segment:
//	seg.Unlink()
//	defer seg.Close() // unmaps
//
// Rings, one per direction, lie in a segment (RingSize bytes each):
//
//	w := shm.NewRing(seg.Data[off:off+shm.RingSize(n)], n, true) // creator initialises
//	w.Write(p)... ; r.Read(p)...
//
// Everything here is Linux-specific (futex, /proc); elsewhere Create
// and Open return an error and HostID is empty, so callers fall back
// to their network path.
package shm
