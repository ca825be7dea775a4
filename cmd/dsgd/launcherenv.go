package main

import (
	"fmt"
	"net"
	"strconv"

	"dsgd/internal/launcher"
)

// fromLauncher takes the rank and world size from the launcher that
// started this process (mpirun, mpiexec, srun, torchrun), if any. A
// --rank or --world that disagrees with the launcher's is an error naming
// both: the ranks would never meet.
func (g *groupFlags) fromLauncher(getenv func(string) string) error {
	info, ok, err := launcher.Detect(getenv)
	if err != nil || !ok {
		return err
	}
	if g.rank >= 0 && g.rank != info.Rank {
		return fmt.Errorf("--rank %d disagrees with %s's %s=%d: leave --rank out under a launcher", g.rank, info.Name, info.RankVar, info.Rank)
	}
	if g.world > 0 && g.world != info.Size {
		return fmt.Errorf("--world %d disagrees with %s's %s=%d: the launcher started %d ranks", g.world, info.Name, info.SizeVar, info.Size, info.Size)
	}
	g.rank, g.world, g.env = info.Rank, info.Size, info.Name
	g.launcher = &info
	return nil
}

// loopbackRendezvous picks the rendezvous when the launcher gave no
// address: loopback on a port derived from the job id when every rank is
// on this host; otherwise an error that says what to pass.
func (g *groupFlags) loopbackRendezvous() error {
	l := g.launcher
	const pass = "pass --rendezvous HOST:PORT (an address of rank 0's host that every rank reaches), --listen 0.0.0.0:0 and a shared secret in DSGD_TOKEN (mpirun -x DSGD_TOKEN; srun passes the environment), or set MASTER_ADDR and MASTER_PORT"
	switch l.OneHost() {
	case launcher.No:
		return fmt.Errorf("no rendezvous address, and the %d ranks of %s span several hosts (%s), so loopback cannot join them: %s", l.Size, launcherJobName(l), l.Hosts, pass)
	case launcher.Unknown:
		return fmt.Errorf("no rendezvous address, and %s does not say whether its %d ranks share one host: %s (or, on one host, --rendezvous 127.0.0.1:PORT)", launcherJobName(l), l.Size, pass)
	}
	if l.Port() == 0 {
		return fmt.Errorf("no rendezvous address, and %s names no job id to derive a port from: pass --rendezvous 127.0.0.1:PORT (the same in every rank)", l.Name)
	}
	g.rendezvous = net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port()))
	g.auto = fmt.Sprintf("dsgd: rendezvous %s on loopback: all %d ranks of %s are on this host (%s); the port is derived from the job id (%s), --rendezvous chooses another\n",
		g.rendezvous, l.Size, launcherJobName(l), l.Hosts, l.JobVar)
	return nil
}

// jobToken gives a derived rendezvous the job's identity as its token
// when the user set none, so that a rank of another job whose id hashed
// to the same port is turned away at the rendezvous instead of joining
// this group. It is an identity, not a secret: the rendezvous is on
// loopback, where a token is not required.
func (g *groupFlags) jobToken() {
	if g.auto != "" && g.token == "" {
		g.token = "dsgd job " + g.launcher.Name + " " + g.launcher.JobID
	}
}

// autoHint explains a failed rendezvous on a derived port.
func (g *groupFlags) autoHint() string {
	if g.auto == "" {
		return ""
	}
	return fmt.Sprintf(" (the rendezvous port was derived from %s's job id %s; another program or job may hold it: pass --rendezvous 127.0.0.1:PORT with a free port)", g.launcher.Name, g.launcher.JobID)
}

func launcherJobName(l *launcher.Info) string {
	if l.JobID == "" {
		return l.Name + "'s job"
	}
	return l.Name + " job " + l.JobID
}
