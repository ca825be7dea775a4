package data_test

import (
	"context"
	"fmt"

	"dsgd/data"
)

// A loader over a synthetic data set: shape known up front, batches
// wrapping into the next epoch.
func Example() {
	ds, err := data.Open("synthetic:N=100,C=1,H=8,W=8,classes=4,seed=1", data.Train)
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := data.NewLoader(ds, data.LoaderConfig{
		BatchSize: 32, Train: true, Shuffle: true, Seed: 7,
		Transform: data.TransformConfig{CropSize: 6, Mirror: true, Scale: 1.0 / 256},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	fmt.Println("shape", l.Shape())
	n := 0
	for b, err := range l.All(context.Background()) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("batch %d: epoch %d, %d values\n", b.Seq, b.Epoch, len(b.Data))
		if n++; n == 4 {
			break
		}
	}
	// Output:
	// shape [32 1 6 6]
	// batch 0: epoch 0, 1152 values
	// batch 1: epoch 0, 1152 values
	// batch 2: epoch 0, 1152 values
	// batch 3: epoch 0, 1152 values
}
