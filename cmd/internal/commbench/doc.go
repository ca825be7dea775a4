// Package commbench is `dsgd bench-comm`'s machinery: it measures
// communication (memory bandwidth for scale; allreduce over every path
// dsgd has, beside Open MPI's and gloo's; the parameter-server pattern
// against the reduction tree, beside collective's α-β prediction) and
// returns the tables as data (Section: lines of text and tables of rows
// and columns), which Section.WriteText writes as the command prints
// them. The command's flag values are parsed here too (ParseParts,
// ParseIntList, ParseByteSize(s); Options.Check; Quick, the values of a
// tiny run).
//
// The ranks of a group that spans processes are children of this
// executable (started through package spawn, or by mpirun) running
// "bench-comm --child SPEC" (ChildArgs), which the command routes to
// RunChild. The protocol between parent and child:
//
//   - the spec is one JSON object (commChild): the job (task, sizes,
//     algorithm, repetitions), the rank and world, the rendezvous and
//     token, timeouts, and whether shared memory is on; unknown fields
//     and out-of-range values are refused (decodeCommChild, fuzzed);
//   - a TCP child watches its stdin and exits when it closes: its parent
//     holds the other end, so the parent's death ends the child;
//   - each child reports one JSON line per size (commResult: its timings
//     in seconds and whether the sum checked out) on stdout, or, as an
//     MPI rank, in OUT_DIR/rank-R.jsonl, since mpirun mixes the ranks'
//     stdout; the parent checks every rank reported every size
//     (aggregateComm).
//
// Package collective owns the schedules being measured and the α-β
// model; commbench only runs them, times them and fills in the tables.
package commbench
