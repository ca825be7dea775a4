package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// JobKeyPrefix, followed by a job's name, is the key of that job's
// lease: present, with a time to live, while the job runs.
const JobKeyPrefix = "dsgd:job:"

// DefaultJobTTL is how long a lease outlives its last refresh: a job
// killed without releasing it frees the store this long after.
const DefaultJobTTL = 15 * time.Second

// ErrOtherJob is wrapped by ClaimJob's error when the store holds the
// lease of another live job.
var ErrOtherJob = errors.New("the store is in use by another job")

// JobLease is a job's claim on a store (ClaimJob). Release ends it.
type JobLease struct {
	s    *Store
	key  string
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// ClaimJob claims the store for job, so that two jobs on one Redis do not
// overwrite each other's weights: it fails with an error wrapping
// ErrOtherJob, naming the other job and what its lease says, when the
// lease of a job with another name is present; several processes of one
// job (a sharded parameter server) may each claim it. The lease, holding
// holder (who claimed it, for that message), lives ttl (0:
// DefaultJobTTL) and is refreshed every ttl/3 until Release.
func (s *Store) ClaimJob(ctx context.Context, job, holder string, ttl time.Duration) (*JobLease, error) {
	if job == "" {
		return nil, errors.New("redisstore: ClaimJob with an empty job name")
	}
	if ttl <= 0 {
		ttl = DefaultJobTTL
	}
	key := JobKeyPrefix + job
	if err := s.otherJob(ctx, key); err != nil {
		return nil, err
	}
	ms := strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)
	if _, err := s.c.Do(ctx, "SET", key, holder, "PX", ms); err != nil {
		return nil, fmt.Errorf("redisstore: claiming the store for job %q: %w", job, err)
	}
	// Two jobs that checked at once both see each other now: both
	// refuse, which is safe.
	if err := s.otherJob(ctx, key); err != nil {
		s.c.Del(context.WithoutCancel(ctx), key)
		return nil, err
	}
	l := &JobLease{s: s, key: key, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-l.quit:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.Background(), ttl/3)
				s.c.Do(rctx, "SET", key, holder, "PX", ms) // a miss is made up by the next
				cancel()
			}
		}
	}()
	return l, nil
}

// otherJob returns an error naming the first job other than the one of
// key whose lease the store holds.
func (s *Store) otherJob(ctx context.Context, key string) error {
	cursor := "0"
	var others []string
	for {
		v, err := s.c.Do(ctx, "SCAN", cursor, "MATCH", JobKeyPrefix+"*", "COUNT", "1000")
		if err != nil {
			return fmt.Errorf("redisstore: looking for other jobs' leases: %w", err)
		}
		if v.Kind != KindArray || len(v.Elems) != 2 || v.Elems[1].Kind != KindArray {
			return fmt.Errorf("redisstore: redis %s: SCAN: %w: unexpected reply", s.c.ep.Addr, ErrProtocol)
		}
		for _, e := range v.Elems[1].Elems {
			if k := string(e.Str); k != key {
				others = append(others, k)
			}
		}
		cursor = string(v.Elems[0].Str)
		if cursor == "0" {
			break
		}
	}
	if len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	holder, err := s.c.Get(ctx, others[0])
	if err != nil {
		holder = []byte("(expired just now)")
	}
	return fmt.Errorf("redisstore: redis %s: %w: job %q (lease %s: %s) keeps its weights there; two jobs on one Redis would corrupt each other: give this job another database (redis://HOST:PORT/N) or stop that one",
		s.c.ep.Addr, ErrOtherJob, others[0][len(JobKeyPrefix):], others[0], holder)
}

// Release stops refreshing the lease and deletes it.
func (l *JobLease) Release(ctx context.Context) error {
	l.once.Do(func() { close(l.quit) })
	<-l.done
	_, err := l.s.c.Del(ctx, l.key)
	return err
}
