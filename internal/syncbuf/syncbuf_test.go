package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: writers and a reader at once (run with -race);
// every write lands whole.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("ab"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if s := b.String(); len(s) != 800 || strings.Count(s, "ab") != 400 {
		t.Fatalf("%d bytes, %d whole writes; want 800 and 400", len(s), strings.Count(s, "ab"))
	}
}
