package job

import (
	"fmt"

	"dsgd/caffe/caffedef"
	"dsgd/data"
	"dsgd/engine/tensor"
	"dsgd/training/train"
)

// windowFeed opens a WindowData layer's window file: the layer samples
// foreground and background windows of its images every batch, as
// Caffe's WindowDataLayer. batch overrides the TRAIN phase's batch_size;
// the tops' shapes go into shapes.
func windowFeed(dl caffedef.DataLayer, batch int, split data.Split, seed uint64, shapes map[string]tensor.Shape) (train.Feed, error) {
	if len(dl.Tops) != 2 || dl.Window == nil {
		return train.Feed{}, fmt.Errorf("%s: WindowData layer %q needs two tops (data, label) and a window_data_param", dl.Pos, dl.Name)
	}
	w := dl.Window
	cfg := data.WindowConfig{
		Name: dl.Name, Source: dl.Source, RootFolder: w.RootFolder, BatchSize: dl.BatchSize,
		FgThreshold: w.FgThreshold, BgThreshold: w.BgThreshold, FgFraction: w.FgFraction,
		ContextPad: w.ContextPad, Square: w.CropMode == "square", CacheImages: w.CacheImages,
		Scale: w.Scale, Transform: dl.Transform, Seed: seed,
	}
	if batch > 0 && split == data.Train {
		cfg.BatchSize = batch
	}
	src, err := data.OpenWindows(cfg)
	if err != nil {
		return train.Feed{}, fmt.Errorf("%s: %w (or override the source with Options.Data)", dl.Pos, err)
	}
	shapes[dl.Tops[0]] = src.Shape()
	shapes[dl.Tops[1]] = tensor.Shape{cfg.BatchSize}
	return train.Feed{Tops: dl.Tops, Source: src}, nil
}
