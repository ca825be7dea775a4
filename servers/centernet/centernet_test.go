package centernet

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"dsgd/internal/spawn"
	"dsgd/protocol/center"
)

// TestShardRange: a shard I/K is the I-th of K even ranges; a spec out
// of range is refused, naming the field.
func TestShardRange(t *testing.T) {
	if lo, hi, err := ShardRange("", 10); lo != 0 || hi != 10 || err != nil {
		t.Fatalf("no shard: [%d,%d) %v", lo, hi, err)
	}
	lo, hi, err := ShardRange("1/2", 10)
	if err != nil || lo >= hi || lo == 0 || hi != 10 {
		t.Fatalf("1/2 of 10: [%d,%d) %v", lo, hi, err)
	}
	for _, bad := range []string{"2/2", "0/11", "x", "-1/2"} {
		if _, _, err := ShardRange(bad, 10); err == nil || !strings.HasPrefix(err.Error(), "ServeConfig.Shard ") {
			t.Errorf("%q: got %v, want a refusal naming ServeConfig.Shard", bad, err)
		}
	}
}

// TestJobName: a given name is kept; without one, the token names the
// job, the same for every process of the job.
func TestJobName(t *testing.T) {
	if got := jobName("mine", "tok"); got != "mine" {
		t.Fatalf("got %q", got)
	}
	a, b := jobName("", "tok"), jobName("", "tok")
	if a != b || a == jobName("", "other") || !strings.HasPrefix(a, "t") {
		t.Fatalf("derived names %q %q", a, b)
	}
}

// TestDialServe: a worker dials the center Serve serves and pulls its
// weights; a model of another size is refused, and an empty address too.
func TestDialServe(t *testing.T) {
	w := []float32{1, 2, 3}
	local, err := center.NewLocal(center.Config{Workers: 1, Weights: w, MaxIter: 1})
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := spawn.LoopbackAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ServeConfig{Listen: addrs[0], Center: local, Workers: 1, Timeout: 5 * time.Second, Out: io.Discard})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	cfg := DialConfig{Addr: addrs[0], Workers: 1, Weights: w, Timeout: 5 * time.Second}
	c, closeCenter, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCenter()
	if _, err := c.Join(ctx, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(w))
	if err := c.Pull(ctx, 0, got); err != nil || !slices.Equal(got, w) {
		t.Fatalf("pulled %v, %v; want %v", got, err, w)
	}
	cfg.Weights = []float32{1}
	if _, _, err := Dial(ctx, cfg); err == nil || !strings.Contains(err.Error(), "serves 3 parameters, this model has 1") {
		t.Errorf("another model: %v", err)
	}
	if _, _, err := Dial(ctx, DialConfig{}); err == nil || !strings.HasPrefix(err.Error(), "DialConfig.Addr: ") {
		t.Errorf("no address: %v", err)
	}
}
