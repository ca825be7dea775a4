package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestClaimJob: a second job on the same Redis is refused, with an error
// naming the live job and its holder; processes of the same job share
// the store; once the first job releases its lease, or its lease expires
// (the job was killed), the store is free again.
func TestClaimJob(t *testing.T) {
	srv := startRedis(t)
	st := NewStore(dialTest(t, srv, Config{}))
	ctx := context.Background()
	a, err := st.ClaimJob(ctx, "jobA", "ps 127.0.0.1:7077 pid 1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimJob(ctx, "jobB", "ps 127.0.0.1:7078 pid 2", 0); !errors.Is(err, ErrOtherJob) || !strings.Contains(err.Error(), `job "jobA"`) || !strings.Contains(err.Error(), "pid 1") {
		t.Fatalf("a second job's claim: %v; want ErrOtherJob naming job A and its holder", err)
	}
	shard, err := st.ClaimJob(ctx, "jobA", "ps shard 1 pid 3", 0)
	if err != nil {
		t.Fatalf("a second process of the same job: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := shard.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := st.ClaimJob(ctx, "jobB", "pid 2", 300*time.Millisecond)
	if err != nil {
		t.Fatalf("after job A released the store: %v", err)
	}
	// Job B is killed: its lease is not refreshed and expires.
	b.once.Do(func() { close(b.quit) })
	<-b.done
	if _, err := st.ClaimJob(ctx, "jobC", "pid 4", 0); !errors.Is(err, ErrOtherJob) {
		t.Fatalf("claim while job B's lease lives: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	c, err := st.ClaimJob(ctx, "jobC", "pid 4", 0)
	if err != nil {
		t.Fatalf("after job B's lease expired: %v", err)
	}
	c.Release(ctx)
}
