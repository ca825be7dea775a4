package main

import (
	"errors"
	"fmt"

	"dsgd/protocol/scheme"
	"dsgd/training/job"
)

// checkMPIFlags refuses the MPI flags where they cannot work: --allreduce
// mpi without --transport mpi, and --transport mpi for a scheme with a
// center (MPI ends the whole job when one process dies; those schemes must
// survive a worker's death, so their center stays on TCP).
func checkMPIFlags(f *trainFlags) error {
	if f.o.Allreduce == job.AllreduceMPI && f.o.Transport != "mpi" {
		return errors.New("--allreduce mpi hands the collectives to MPI: it needs --transport mpi (mpirun -np N dsgd worker --transport mpi --allreduce mpi ...)")
	}
	if f.o.Transport != "mpi" {
		return nil
	}
	name := f.o.SchemeName()
	if in, _ := scheme.Lookup(name); in.Center != scheme.NoCenter {
		return fmt.Errorf("--scheme %s keeps its center (parameter server or shared buffer server) on TCP: MPI ends the whole job when one process dies, and %s must survive that; use --transport tcp (dsgd train --transport tcp, or dsgd worker --center HOST:PORT beside dsgd ps/smb). --transport mpi is for the synchronous schemes (sync-tree, sync-ring, overlap, sync-ps, sync-easgd)", name, name)
	}
	if f.o.Compress == "fp16" {
		return errors.New("--compress works with --transport tcp for fp16, the tcp wire's encoding; MPI moves float32 (bf16, powersgd:R, topk:F and sign run above the transport, over MPI too)")
	}
	return nil
}

// joinMPI makes this process a rank of its MPI job (job.JoinMPI): the
// rank and world come from MPI, and a --rank or --world that disagrees
// is an error.
func (g *groupFlags) joinMPI(f *trainFlags) error {
	if err := checkMPIFlags(f); err != nil {
		return err
	}
	native := f.o.Allreduce == job.AllreduceMPI
	ep, nep, err := job.JoinMPI(g.rank, g.world, native)
	if err != nil {
		return asFlags(err, trainFlagNames)
	}
	g.rank, g.world, g.rendezvous, g.mpi, g.native = ep.Rank(), ep.Size(), "mpi", ep, nep
	if native {
		f.o.Allreduce = "auto" // what the schedules would have used; MPI picks its own
	}
	return nil
}
