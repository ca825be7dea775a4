// Package launcher reads what a job launcher tells the processes it
// starts: Open MPI's mpirun, MPICH's and Intel MPI's mpiexec (Hydra, PMI),
// Slurm's srun, and torchrun-style RANK and WORLD_SIZE. From the
// environment alone it gives each process its rank, the world size,
// whether every rank runs on one host, and an identity of the job that is
// the same in every rank of it and different from other jobs' (from which
// a rendezvous port on loopback can be derived, so that a one-host job
// needs no address).
//
//	info, ok, err := launcher.Detect(os.Getenv)
//	if ok && info.OneHost() == launcher.Yes {
//		addr := fmt.Sprintf("127.0.0.1:%d", info.Port())
//	}
//
// Resolve places a process in its group from what the command said and
// the environment: the launcher's rank and world size, a rendezvous from
// MASTER_ADDR/MASTER_PORT or DSGD_RENDEZVOUS, or loopback on the job's
// port when every rank is on this host; its errors name Placement's
// fields, which a command maps to its flags.
//
//	p, err := launcher.Resolve(launcher.Placement{Rank: -1}, os.Getenv)
//
// Secret.Resolve is the group's shared token the same way: the one
// given, DSGD_TOKEN, or the first line of a token file.
//
// It is a leaf: it imports no other dsgd package, opens no socket and
// reads nothing but the environment it is given and Secret's token
// file.
package launcher
