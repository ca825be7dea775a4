package rpc

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestConnOnClose: a handler sees its connection, and the hooks it
// registers run in order once that connection ends, whether the client
// closes it or the server closes.
func TestConnOnClose(t *testing.T) {
	const opWatch = 9
	cases := []struct {
		name        string
		serverClose bool
	}{
		{"client closes", false},
		{"server closes", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var ran []string
			var conn *Conn
			closed := make(chan struct{})
			h := func(ctx context.Context, req *Request, resp *Response) error {
				cn := ConnFrom(ctx)
				if cn == nil {
					t.Error("ConnFrom(handler ctx) = nil")
					return nil
				}
				mu.Lock()
				conn = cn
				mu.Unlock()
				resp.Text = cn.RemoteAddr()
				cn.OnClose(func() { mu.Lock(); ran = append(ran, "first"); mu.Unlock() })
				cn.OnClose(func() { mu.Lock(); ran = append(ran, "second"); mu.Unlock(); close(closed) })
				return nil
			}
			srv, err := Listen("", Config{Token: "t"}, h)
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(context.Background()) }()
			defer srv.Close()
			cl, err := Dial(context.Background(), srv.Addr(), Config{Token: "t"})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var resp Response
			if err := cl.Call(context.Background(), &Request{Op: opWatch}, &resp); err != nil {
				t.Fatal(err)
			}
			if resp.Text == "" || resp.Text == srv.Addr() {
				t.Errorf("RemoteAddr %q: want the client's address", resp.Text)
			}
			mu.Lock()
			if len(ran) != 0 {
				t.Errorf("hooks ran while the connection is open: %v", ran)
			}
			mu.Unlock()
			if c.serverClose {
				srv.Close()
				if err := <-served; err != nil {
					t.Fatal(err)
				}
				// Serve returns only after the hooks ran.
				select {
				case <-closed:
				default:
					t.Fatal("Serve returned before the hooks ran")
				}
			} else {
				cl.Close()
				select {
				case <-closed:
				case <-time.After(20 * time.Second):
					t.Fatal("the hooks did not run after the client closed")
				}
			}
			mu.Lock()
			if !slices.Equal(ran, []string{"first", "second"}) {
				t.Errorf("hooks ran %v, want [first second]", ran)
			}
			late := conn
			mu.Unlock()
			// Registered after the end, a hook runs at once.
			now := false
			late.OnClose(func() { now = true })
			if !now {
				t.Error("a hook registered after the end did not run at once")
			}
		})
	}
	if ConnFrom(context.Background()) != nil {
		t.Error("ConnFrom(Background) is not nil")
	}
}
