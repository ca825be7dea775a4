// Package spawn starts a group of child processes of this executable on
// this host and sees them through to the end: it is the one process
// launcher behind `dsgd train --transport tcp` (a rank per process, and a
// center) and `dsgd bench-comm` (a rank per process of each group it
// measures).
//
//	g, err := spawn.Start(ctx, procs, spawn.Options{Linger: 2 * time.Second})
//	if err != nil {
//		return err // none is left running
//	}
//	exits := g.Wait() // every child reaped; exits[i].Stopped: we stopped it
//
// What it does for every group:
//   - each child runs in a process group of its own (on Linux, with the
//     kernel sending it SIGTERM should this process die without stopping
//     it), so a terminal's Ctrl-C reaches this process alone, which
//     forwards a stop once: Options.Stop picks the signal (the one this
//     process got, so that a training rank snapshots), and a child that
//     has not exited Options.Grace later is killed;
//   - a failed child takes the others down Options.Linger later (time
//     for them to report their own view), or never (Linger < 0: an
//     asynchronous scheme's workers train on without a dead one);
//   - a child may hold a pipe on its stdin that this process keeps open
//     until the child exits, so that the child sees end of file when its
//     parent dies, even by SIGKILL;
//   - Wait returns only once every child has been reaped, with each one's
//     exit and whether the group stopped it.
//
// Detecting an external launcher (mpirun, srun, torchrun) is package
// launcher's job, which reads the environment only; spawning is kept apart
// from it because it owns processes, pipes and signals, which the ranks
// that merely read their environment do not need.
package spawn
