package tcp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"dsgd/comm/transport"
)

// TestShmMixedLinks: ranks 0 and 1 share memory, rank 2 has it off, so
// its pairs talk over TCP; the link counters say which link carried what.
func TestShmMixedLinks(t *testing.T) {
	cfgs := groupConfigs(t, 3, CompressNone)
	cfgs[2].Shm = ShmOff
	eps, errs := connectAll(context.Background(), cfgs)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		defer eps[r].Close()
	}
	ctx := context.Background()
	go func() {
		eps[1].Send(ctx, 0, 1, make([]float32, 1000))
		eps[2].Send(ctx, 0, 2, make([]float32, 10))
	}()
	if err := eps[0].Recv(ctx, 1, 1, make([]float32, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := eps[0].Recv(ctx, 2, 2, make([]float32, 10)); err != nil {
		t.Fatal(err)
	}
	want := []transport.LinkStats{
		{Kind: "tcp", Peers: 1, BytesRecv: 40, MsgsRecv: 1},
		{Kind: "shm", Peers: 1, BytesRecv: 4000, MsgsRecv: 1},
	}
	got := transport.Links(eps[0])
	if len(got) != len(want) {
		t.Fatalf("links %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Busy <= 0 {
			t.Errorf("%s link: no busy time", got[i].Kind)
		}
		got[i].Busy = 0
		if got[i] != want[i] {
			t.Errorf("link %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if ls := transport.Links(eps[2]); len(ls) != 1 || ls[0].Kind != "tcp" || ls[0].Peers != 2 {
		t.Errorf("rank 2's links: %+v, want 2 peers over tcp", ls)
	}
}

// TestShmAbort: a rank's Abort reaches its shared-memory peer, blocked in
// a Recv, as that rank's error carrying the reason.
func TestShmAbort(t *testing.T) {
	eps := newGroup(t, 2, CompressNone)
	errc := make(chan error, 1)
	go func() { errc <- eps[0].Recv(context.Background(), 1, 0, make([]float32, 4)) }()
	transport.Abort(eps[1], errors.New("worker 1 ran out of memory"))
	wantPeerError(t, "Recv from an aborted peer", <-errc, 1, "aborted: worker 1 ran out of memory")
}

// TestShmCannotCreate: a full segment directory fails Connect on both
// ranks of the pair, with the path and the cause, and leaves no file.
func TestShmCannotCreate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tiny tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, bytes.TrimSpace(out))
	}
	defer exec.Command("umount", dir).Run()
	cfgs := groupConfigs(t, 2, CompressNone)
	for i := range cfgs {
		cfgs[i].ShmDir = dir
	}
	eps, errs := connectAll(context.Background(), cfgs)
	for _, ep := range eps {
		if ep != nil {
			ep.Close()
		}
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), dir+"/dsgd-") || !strings.Contains(errs[0].Error(), "no space left on device") ||
		!strings.Contains(errs[0].Error(), "--shm off") {
		t.Errorf("rank 0: %v", errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "rank 0 on this host could not set up shared memory") || !strings.Contains(errs[1].Error(), "no space left") {
		t.Errorf("rank 1: %v", errs[1])
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("files left: %v", left[0].Name())
	}
}

func TestParseShm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shm
		err  bool
	}{{"", ShmAuto, false}, {"on", ShmAuto, false}, {"auto", ShmAuto, false}, {"off", ShmOff, false}, {"yes", 0, true}} {
		got, err := ParseShm(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseShm(%q) = %v, %v", tc.in, got, err)
		}
	}
	c := Config{Size: 1, ShmRing: 1000}
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Errorf("ring of 1000 bytes: %v", err)
	}
}
