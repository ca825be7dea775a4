// Package checkpoint owns dsgd's snapshot file: the weights of a net, the
// solver's state and the iteration, written atomically and read back with
// every field checked.
//
// # Format, version 2
//
// All integers little-endian.
//
//	offset  size  field
//	0       8     magic "DSGDSNAP"
//	8       4     version (2; version 1 files are read too)
//	12      4     reserved (0)
//	16      8     iteration: the number of completed iterations
//	24      8     layout hash: FNV-1a 64 over each block's name and shape,
//	              so a snapshot is never loaded into a different net
//	32      8     n: number of float32 parameters
//	40      4n    parameters, float32
//	40+4n   8     m: length in bytes of the solver state
//	48+4n   m     solver state, as solver.(*Solver).WriteState writes it
//	48+4n+m 8     k: length in bytes of the run configuration (version 2)
//	56+4n+m k     run configuration: opaque bytes, dsgd's flags as JSON
//	56+4n+m+k 4   CRC-32 (Castagnoli) of every preceding byte
//
// Version 1 has neither k nor the run configuration: its CRC follows the
// solver state. Both are read; version 2 is written.
//
// Write writes to a temporary file in the destination's directory, syncs
// it and renames it over the destination (internal/atomicfile), so a crash
// or a full disk leaves either the old snapshot or the new one, never half
// of one.
package checkpoint
