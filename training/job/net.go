package job

import (
	"context"

	"dsgd/engine/layers"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
	"dsgd/training/train"
)

// TrainNet loads the job o names and builds its TRAIN net, with threads
// goroutines per layer, its inputs filled with one batch: what dsgd time
// times and dsgd simulate calibrates. The caller closes the job.
func TrainNet(ctx context.Context, o Options, threads int) (*Job, *model.Net, error) {
	j, err := Load(o)
	if err != nil {
		return nil, nil, err
	}
	if j.TrainErr != nil {
		return nil, nil, j.TrainErr
	}
	if err := j.OpenData(false, 1); err != nil {
		j.Close()
		return nil, nil, err
	}
	opt := model.Options{Phase: layers.Train, Threads: threads, Seed: j.Seed}
	net, err := model.Build(j.Train.Spec, j.TrainShapes, opt)
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	if s := train.NewNetShapes(net, j.Train.Spec, j.TrainShapes, opt, j.TrainFeeds, "TRAIN"); s != nil {
		// Batches of varying shapes (batch_size 1 over records of
		// differing shapes): the net of the first batch's.
		if net, err = s.Pick(ctx); err != nil {
			j.Close()
			return nil, nil, err
		}
	}
	// Labels past a loss layer's classes would stop the pass with a panic
	// in the layer; refuse them here, naming the data, as training does.
	if err := j.CheckLabels(net, j.Train.Spec); err != nil {
		j.Close()
		return nil, nil, err
	}
	if err := Fill(ctx, net, j.TrainFeeds); err != nil {
		j.Close()
		return nil, nil, err
	}
	return j, net, nil
}

// Fill fills net's inputs with the next batch of each feed.
func Fill(ctx context.Context, net *model.Net, feeds []train.Feed) error {
	for _, f := range feeds {
		tops := make([]*tensor.Blob, len(f.Tops))
		for i, name := range f.Tops {
			tops[i] = net.Input(name)
		}
		if err := f.Source.Fill(ctx, tops); err != nil {
			return err
		}
	}
	return nil
}
