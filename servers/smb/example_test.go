package smb_test

import (
	"context"
	"fmt"

	"dsgd/servers/smb"
)

// The SEASGD layout on an in-process store: two workers push their
// increments into the global weights (ShmCaffe Eq. 7).
func Example() {
	ctx := context.Background()
	store := smb.NewStore(0)
	c, err := smb.NewCenter(store, smb.CenterConfig{Workers: 2, N: 2, Weights: []float32{1, 1}})
	if err != nil {
		panic(err)
	}
	for w := range 2 {
		if _, err := c.Join(ctx, w); err != nil {
			panic(err)
		}
	}
	_ = c.Push(ctx, 0, []float32{0.5, 0})
	_ = c.Push(ctx, 1, []float32{0, -0.25})
	w := make([]float32, 2)
	_ = c.Pull(ctx, 0, w)
	fmt.Println(w)

	_, err = store.Attach(ctx, "nope")
	fmt.Println(err)
	err = store.Read(ctx, smb.KeyGlobal, 1, make([]float32, 2))
	fmt.Println(err)
	// Output:
	// [1.5 0.75]
	// smb: unknown key "nope": no buffer was created under it
	// smb: out of bounds: read of 2 values at offset 1 of buffer "W_g", which holds 2
}
