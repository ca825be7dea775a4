package launcher

import (
	"strconv"
	"strings"
	"testing"
)

// TestResolve: under a launcher, rank and world come from it and a Rank
// or World that disagrees is refused naming both fields; without an
// address the rendezvous is loopback on the job's port when every rank is
// on this host (with the job's identity as JobToken), an error naming
// Placement.Rendezvous otherwise.
func TestResolve(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	ompi := []string{"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "OMPI_MCA_ess_base_jobid", "1094320129"}
	loop := "127.0.0.1:" + strconv.Itoa(Info{Name: "Open MPI", JobID: "1094320129"}.Port())
	none := Placement{Rank: -1}
	cases := []struct {
		name        string
		p           Placement
		env         []string
		rank, world int
		rdv, token  string
		want        string
	}{
		{name: "open mpi, one host", p: none, env: ompi, rank: 1, world: 2, rdv: loop, token: "dsgd job Open MPI 1094320129"},
		{name: "an address wins", p: none, env: append(append([]string{}, ompi...), "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29500"), rank: 1, world: 2, rdv: "10.0.0.1:29500"},
		{name: "given", p: Placement{Rank: 0, World: 3, Rendezvous: "h:1"}, rank: 0, world: 3, rdv: "h:1"},
		{name: "DSGD_RENDEZVOUS", p: Placement{Rank: 2, World: 3}, env: []string{"DSGD_RENDEZVOUS", "h:2"}, rank: 2, world: 3, rdv: "h:2"},
		{name: "rank disagrees", p: Placement{Rank: 0}, env: ompi, want: "Placement.Rank 0 disagrees with Open MPI's OMPI_COMM_WORLD_RANK=1: leave Placement.Rank out"},
		{name: "world disagrees", p: Placement{Rank: -1, World: 4}, env: ompi, want: "Placement.World 4 disagrees with Open MPI's OMPI_COMM_WORLD_SIZE=2"},
		{name: "nothing", p: none, want: "set Placement.Rank and Placement.World"},
		{name: "out of range", p: Placement{Rank: 3, World: 3}, want: "rank 3 out of range for a world of 3"},
		{name: "no address", p: Placement{Rank: 0, World: 2}, want: "no rendezvous address: set Placement.Rendezvous to HOST:PORT"},
		{name: "across hosts", p: none, env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_LOCAL_SIZE", "2", "OMPI_MCA_ess_base_jobid", "3"},
			want: "span several hosts (OMPI_COMM_WORLD_LOCAL_SIZE=2 of OMPI_COMM_WORLD_SIZE=4), so loopback cannot join them: set Placement.Rendezvous to HOST:PORT"},
		{name: "no job id", p: none, env: []string{"PMI_RANK", "0", "PMI_SIZE", "2", "MPI_LOCALNRANKS", "2"}, want: "MPICH/PMI names no job id"},
		{name: "one rank needs no rendezvous", p: none, env: []string{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1", "OMPI_COMM_WORLD_LOCAL_SIZE", "1"}, rank: 0, world: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Resolve(c.p, env(c.env...))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Rank != c.rank || p.World != c.world || p.Rendezvous != c.rdv || p.JobToken() != c.token {
				t.Fatalf("got %+v, token %q", p, p.JobToken())
			}
			derived := c.token != ""
			if (p.Derived != "") != derived || (p.Hint() != "") != derived {
				t.Fatalf("derived %v, but note %q and hint %q", derived, p.Derived, p.Hint())
			}
			if derived && !strings.Contains(p.Derived, "derived from the job id (OMPI_MCA_ess_base_jobid)") {
				t.Errorf("the note does not say where the port came from: %q", p.Derived)
			}
		})
	}
}
