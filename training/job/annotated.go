package job

import (
	"fmt"

	"dsgd/caffe/caffedef"
	"dsgd/data"
	"dsgd/data/db"
	"dsgd/engine/tensor"
	"dsgd/training/train"
)

// annotatedFeed opens SSD's AnnotatedData layer: its database of
// AnnotatedDatum records, read in order (a worker every world-th record
// from its rank), augmented as the fork does, into a data top and a
// label top of 1×1×G×8 box rows. batch overrides the TRAIN phase's
// batch_size; the tops' first shapes go into shapes.
func (j *Job) annotatedFeed(dl caffedef.DataLayer, split data.Split, seed uint64, rank, world int, shapes map[string]tensor.Shape) (train.Feed, error) {
	if dl.Annotated == nil {
		return train.Feed{}, fmt.Errorf("%s: AnnotatedData layer %q has no settings", dl.Pos, dl.Name)
	}
	cfg := *dl.Annotated
	backend, err := db.ParseBackend(orDefault(dl.Backend, "LEVELDB"))
	if err != nil {
		return train.Feed{}, fmt.Errorf("%s: %w", dl.Pos, err)
	}
	cfg.Source, cfg.Backend, cfg.BatchSize = dl.Source, backend, dl.BatchSize
	if j.opts.Batch > 0 && split == data.Train {
		cfg.BatchSize = j.opts.Batch
	}
	cfg.Train = split == data.Train
	cfg.Seed = seed
	if split == data.Train {
		cfg.Rank, cfg.World = rank, world
	}
	src, err := data.OpenAnnotated(cfg)
	if err != nil {
		return train.Feed{}, fmt.Errorf("%s: %w", dl.Pos, err)
	}
	j.annotated = append(j.annotated, src)
	shapes[dl.Tops[0]] = src.Shape()
	if len(dl.Tops) > 1 {
		shapes[dl.Tops[1]] = src.LabelShape()
		if !src.Rich() {
			j.labelSources[dl.Tops[1]] = fmt.Sprintf("data layer %q (source %s)", dl.Name, dl.Source)
		}
	}
	s := src.Shape()
	j.DataDesc = append(j.DataDesc, fmt.Sprintf("%s %s: AnnotatedData, %dx%dx%d after the transform, read in order", dl.Source, split, s[1], s[2], s[3]))
	return train.Feed{Tops: dl.Tops, Source: src}, nil
}
