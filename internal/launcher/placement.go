package launcher

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// Placement is a process's place in a multi-process group. Before
// Resolve it holds what the command said (Rank -1, World 0 and
// Rendezvous "" when it said nothing); after, what the process uses.
// Errors name its fields ("Placement.Rank"); a command maps them to its
// flags.
type Placement struct {
	// Rank is this process's rank in [0, World).
	Rank int
	// World is the number of ranks in the group.
	World int
	// Rendezvous is the HOST:PORT where rank 0 gathers the group.
	Rendezvous string
	// Launcher is what the launcher that started this process said; nil
	// without one.
	Launcher *Info
	// Derived is set when Resolve derived Rendezvous from the launcher's
	// job id (loopback, on a port of the job's): the line that says so.
	// Empty when the rendezvous was given.
	Derived string
}

// Resolve fills what p leaves unset from the environment getenv reads: the
// launcher's rank and world size (Detect; a Rank or World that disagrees
// with the launcher's is an error naming both, for the ranks would never
// meet), then MASTER_ADDR and MASTER_PORT, then DSGD_RENDEZVOUS; with
// none of them, under a launcher whose ranks are all on this host,
// loopback on a port derived from the job id (Info.Port). A group of one
// needs no rendezvous.
func Resolve(p Placement, getenv func(string) string) (Placement, error) {
	info, ok, err := Detect(getenv)
	if err != nil {
		return p, err
	}
	if ok {
		if p.Rank >= 0 && p.Rank != info.Rank {
			return p, fmt.Errorf("Placement.Rank %d disagrees with %s's %s=%d: leave Placement.Rank out under a launcher", p.Rank, info.Name, info.RankVar, info.Rank)
		}
		if p.World > 0 && p.World != info.Size {
			return p, fmt.Errorf("Placement.World %d disagrees with %s's %s=%d: the launcher started %d ranks", p.World, info.Name, info.SizeVar, info.Size, info.Size)
		}
		p.Rank, p.World, p.Launcher = info.Rank, info.Size, &info
	}
	if p.Rank < 0 || p.World <= 0 {
		return p, errors.New("no rank and world size: set Placement.Rank and Placement.World, or run under mpirun, srun, or with RANK and WORLD_SIZE set")
	}
	if p.Rank >= p.World {
		return p, fmt.Errorf("rank %d out of range for a world of %d", p.Rank, p.World)
	}
	if p.Rendezvous == "" {
		if a, port := getenv("MASTER_ADDR"), getenv("MASTER_PORT"); a != "" && port != "" {
			p.Rendezvous = net.JoinHostPort(a, port)
		} else {
			p.Rendezvous = getenv("DSGD_RENDEZVOUS")
		}
	}
	if p.Rendezvous == "" && p.World > 1 && p.Launcher != nil {
		if err := p.loopback(); err != nil {
			return p, err
		}
	}
	if p.Rendezvous == "" && p.World > 1 {
		return p, errors.New("no rendezvous address: set Placement.Rendezvous to HOST:PORT, or set MASTER_ADDR and MASTER_PORT (or DSGD_RENDEZVOUS)")
	}
	return p, nil
}

// loopback picks the rendezvous when the launcher gave no address:
// loopback on a port derived from the job id when every rank is on this
// host; otherwise an error that says what to set.
func (p *Placement) loopback() error {
	l := p.Launcher
	const set = "set Placement.Rendezvous to HOST:PORT (an address of rank 0's host that every rank reaches) with a listen address every rank reaches and a shared token, or set MASTER_ADDR and MASTER_PORT"
	switch l.OneHost() {
	case No:
		return fmt.Errorf("no rendezvous address, and the %d ranks of %s span several hosts (%s), so loopback cannot join them: %s", l.Size, l.jobName(), l.Hosts, set)
	case Unknown:
		return fmt.Errorf("no rendezvous address, and %s does not say whether its %d ranks share one host: %s (or, on one host, Placement.Rendezvous 127.0.0.1:PORT)", l.jobName(), l.Size, set)
	}
	if l.Port() == 0 {
		return fmt.Errorf("no rendezvous address, and %s names no job id to derive a port from: set Placement.Rendezvous to 127.0.0.1:PORT (the same in every rank)", l.Name)
	}
	p.Rendezvous = net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port()))
	p.Derived = fmt.Sprintf("dsgd: rendezvous %s on loopback: all %d ranks of %s are on this host (%s); the port is derived from the job id (%s), Placement.Rendezvous chooses another\n",
		p.Rendezvous, l.Size, l.jobName(), l.Hosts, l.JobVar)
	return nil
}

// JobToken is the token of a derived rendezvous when the user set none:
// the job's identity, so that a rank of another job whose id hashed to
// the same port is turned away at the rendezvous instead of joining this
// group. It is an identity, not a secret: the rendezvous is on loopback,
// where a token is not required. "" when the rendezvous was given.
func (p Placement) JobToken() string {
	if p.Derived == "" {
		return ""
	}
	return "dsgd job " + p.Launcher.Name + " " + p.Launcher.JobID
}

// Hint explains a failed rendezvous on a derived port, to append to the
// error; "" when the rendezvous was given.
func (p Placement) Hint() string {
	if p.Derived == "" {
		return ""
	}
	return fmt.Sprintf(" (the rendezvous port was derived from %s's job id %s; another program or job may hold it: set Placement.Rendezvous to 127.0.0.1:PORT with a free port)", p.Launcher.Name, p.Launcher.JobID)
}

// jobName names the launcher's job in messages.
func (i *Info) jobName() string {
	if i.JobID == "" {
		return i.Name + "'s job"
	}
	return i.Name + " job " + i.JobID
}
