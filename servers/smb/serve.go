package smb

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Run runs a shared buffer server (ShmCaffe's SMB, dsgd smb) on addr
// until ctx is done: a fresh store, in shared memory unless noShm, that
// refuses buffers past memLimit bytes (0: no limit), served with cfg to
// clients that present cfg.Token. It writes to out the address it
// listens on, then one line per connection that ended in an error and
// one per refused rank claim (cfg.ErrorLog is set to write them).
func Run(ctx context.Context, addr string, cfg Config, memLimit int64, noShm bool, out io.Writer) error {
	var mu sync.Mutex // serialises out's writes
	cfg.ErrorLog = func(err error) {
		msg := err.Error()
		if !strings.HasPrefix(msg, "smb: ") {
			msg = "smb: " + msg
		}
		mu.Lock()
		fmt.Fprintln(out, msg)
		mu.Unlock()
	}
	store := NewStore(memLimit)
	if !noShm {
		store = NewShmStore(memLimit, "")
	}
	srv, err := Listen(addr, store, cfg)
	if err != nil {
		return err
	}
	mu.Lock()
	fmt.Fprintf(out, "smb: serving on %s\n", srv.Addr())
	mu.Unlock()
	return srv.Serve(ctx)
}
