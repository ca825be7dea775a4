// Package mpi owns dsgd's MPI transport: a transport.Endpoint whose ranks
// are the processes of an MPI job (mpirun, or srun with PMI), exchanging
// point-to-point messages through MPI, and, through Native, MPI's own
// collectives (MPI_Allreduce in place, MPI_Bcast, MPI_Reduce,
// MPI_Barrier) for a collective.Executor to hand its work to.
//
// The canonical use, in every process of the job:
//
//	ep, err := mpi.World() // rank and size are MPI's
//	if err != nil { ... }  // names what to install when MPI is missing
//	defer mpi.Finalize()   // after ep.Close, before exit
//	defer ep.Close()
//	ex := collective.NewExecutor(ep) // dsgd's schedules over MPI messages
//	// or: nep, _ := mpi.Native(ep); ex := collective.NewExecutor(nep)
//
// Open MPI is opened at run time (dlopen of libmpi.so.40), as tensor opens
// OpenBLAS: every build has the transport, building needs no MPI headers,
// and a dsgd on a machine without Open MPI runs everything else and says,
// only when --transport mpi is asked for, what to install. A build tag
// would have cost those users nothing either, but would have made the
// feature a rebuild away for those who do have MPI. The prototypes are
// MPI's C API with Open MPI's ABI: handles are pointers, the predefined
// ones (MPI_COMM_WORLD, MPI_FLOAT, MPI_BYTE, MPI_SUM, MPI_ERRORS_RETURN)
// the addresses of exported objects found with dlsym; MPICH's integer
// handles are refused by name. Under -tags purego (no cgo) every call
// returns an error saying so.
//
// MPI is initialised once per process with MPI_THREAD_MULTIPLE (several
// goroutines send and receive at once) on a locked OS thread, which also
// finalizes it. Errors return codes (MPI_ERRORS_RETURN) that become
// *transport.PeerError naming the peer. Open MPI's own SIGSEGV handlers
// are turned off (OMPI_MCA_opal_signal) unless the user set them, so that
// Go's stay in charge.
//
// A message is a 16-byte header (tag, kind, length) and the payload, two
// MPI messages on the pair's stream of a communicator private to the
// group (a duplicate of MPI_COMM_WORLD); MPI's ordering between two ranks
// gives per-pair FIFO, and the header lets the receiver refuse a message
// of another tag, kind or length, naming the sender, before its payload
// lands. Payloads move from and into the caller's slices (pinned while
// MPI holds them), so on one host Open MPI's shared-memory transport
// carries them. Calls wait by polling MPI_Test, spinning first and then
// sleeping with a growing pause, so that contexts are honoured and an idle
// rank does not hold a core. A cancelled receive is cancelled in MPI; Open
// MPI cannot cancel a send, so a send given up on is left to complete in
// the background, its buffer pinned for good. Close sends each peer a
// close notice (with Abort's reason), which its next receive reports.
//
// MPI ends the whole job when a process dies, so this transport suits the
// synchronous schemes, whose group cannot go on without every rank
// anyway; the asynchronous schemes, which must survive a worker's death,
// keep their center on TCP (package rpc).
//
// The ranks of an MPI job meet without a rendezvous, which over tcp is
// where every rank's parameter layout is compared with rank 0's;
// AgreeLayout makes that check over the connected endpoint.
package mpi
