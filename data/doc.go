// Package data owns dsgd's training inputs: data sets held in memory and
// the loaders that turn them into float32 batches.
//
// A Dataset is a set of uint8 images in NCHW order (or float32 values),
// each with an int32 class label. It comes from MNIST-style IDX files
// (gzipped or not; ReadIDXFiles), CIFAR-10 binary batches
// (ReadCIFARFiles), or a deterministic synthetic generator (Synthetic). Open resolves a user's --data spec — a built-in name
// (fashion-mnist, mnist, cifar10, synthetic[:KEY=VALUE,...]) or a
// directory — to one split; an Opener with its own Root does the same
// against another directory. Every decoder checks its input against the
// file's real size before allocating, and its errors name the file and
// what is wrong with it.
//
// A Loader shards a Dataset across workers (rank of world), shuffles each
// epoch from a seed, applies Caffe's transform_param (crop, mirror, mean,
// scale; TransformConfig) and prepares batches ahead in one background
// goroutine through a free list of reused buffers, so a consumer neither
// waits nor allocates in steady state. The batch sequence depends only on
// the Dataset and the LoaderConfig, never on prefetch depth or timing.
// Iteration wraps from one epoch into the next, as in Caffe, so a batch
// may straddle two epochs.
//
// The canonical use:
//
//	ds, err := data.Open("fashion-mnist", data.Train)
//	if err != nil { ... }
//	l, err := data.NewLoader(ds, data.LoaderConfig{
//		BatchSize: 64, Train: true, Shuffle: true, Seed: seed,
//		Rank: rank, World: world,
//		Transform: data.TransformConfig{Scale: 1.0 / 256},
//	})
//	if err != nil { ... }
//	defer l.Close()
//	for b, err := range l.All(ctx) {
//		if err != nil { ... }
//		// use b.Data (shape l.Shape()) and b.Labels inside the loop only
//	}
//
// or, to keep a batch across calls, Next and Release in pairs.
package data
