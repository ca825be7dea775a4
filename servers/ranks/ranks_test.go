package ranks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"dsgd/comm/rpc"
	"dsgd/servers/ranks"
)

// TestTable: over real connections, a second live claimant of a rank is
// refused once the grace has passed, naming the holder; a rank whose
// holder's connection has ended (dropped) is taken by the next claimant;
// a connection is watched once however many ranks it takes.
func TestTable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu      sync.Mutex
		tab     ranks.Table
		watches int
		grace   = 50 * time.Millisecond // short while a refusal is due
	)
	srv, err := rpc.Listen("127.0.0.1:0", rpc.Config{Token: "t"}, func(ctx context.Context, req *rpc.Request, _ *rpc.Response) error {
		conn := rpc.ConnFrom(ctx)
		rank := int(req.Ints[0])
		mu.Lock()
		defer mu.Unlock()
		held, err := tab.Await(ctx, &mu, rank, conn, grace)
		if err != nil {
			return err
		}
		if held != nil {
			return fmt.Errorf("rank %d held from %s", rank, held.RemoteAddr())
		}
		if tab.Take(rank, conn) {
			watches++
			conn.OnClose(func() {
				mu.Lock()
				defer mu.Unlock()
				tab.Drop(conn)
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx)
	defer srv.Close()
	claim := func(cl *rpc.Client, rank int) error {
		return cl.Call(ctx, &rpc.Request{Ints: [rpc.NumInts]int64{int64(rank)}}, &rpc.Response{})
	}
	dial := func() *rpc.Client {
		cl, err := rpc.Dial(ctx, srv.Addr(), rpc.Config{Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	a, b := dial(), dial()
	defer b.Close()
	for _, r := range []int{1, 2, 1} {
		if err := claim(a, r); err != nil {
			t.Fatalf("a claims %d: %v", r, err)
		}
	}
	var re *rpc.RemoteError
	if err := claim(b, 1); !errors.As(err, &re) {
		t.Fatalf("b claims a's rank 1: %v; want a refusal", err)
	}
	mu.Lock()
	if got := tab.Ranks(); fmt.Sprint(got) != "[1 2]" || tab.Watched() != 1 || watches != 1 {
		t.Errorf("ranks %v, %d watched (%d watches); want [1 2] held over one watched connection", got, tab.Watched(), watches)
	}
	grace = 10 * time.Second // a's connection ends well within it
	mu.Unlock()
	a.Close()
	if err := claim(b, 1); err != nil {
		t.Fatalf("b claims rank 1 after a closed: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := tab.Ranks(); fmt.Sprint(got) != "[1]" || tab.Watched() != 1 {
		t.Errorf("ranks %v, %d watched; want [1] held over b's connection", got, tab.Watched())
	}
}
