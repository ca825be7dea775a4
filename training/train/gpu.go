package train

import (
	"errors"
	"fmt"

	"dsgd/engine/cuda"
	"dsgd/engine/gpunet"
	"dsgd/engine/model"
)

// gpuState is the GPUs a run's nets use (Config.GPUs) and the executors
// that run the nets there.
type gpuState struct {
	open map[int]*cuda.GPU
	nets []*gpunet.Net
}

// gpuRefusal refuses what the GPU engine does not run yet, naming the
// Config fields.
func (t *Trainer) gpuRefusal() error {
	if len(t.cfg.GPUs) == 0 {
		return nil
	}
	switch {
	case t.cfg.Exact:
		return errors.New("train: Config.Exact with Config.GPUs: the exact sums' replicas run on the CPU only")
	case t.cfg.Elastic:
		return errors.New("train: Config.Elastic with Config.GPUs: an elastic group's generations run on the CPU only")
	case Reshaping(t.cfg.TrainFeeds) || Reshaping(t.cfg.TestFeeds):
		return errors.New("train: Config.GPUs with a data layer whose batches vary in shape (batch_size 1 over a database of records of differing shapes, reshaping the net to each record, as Caffe's Data layer): a GPU net has one shape, so these run on the CPU only")
	}
	return nil
}

// gpu opens GPU id once per run.
func (t *Trainer) openGPU(id int) (*cuda.GPU, error) {
	if g := t.gpu.open[id]; g != nil {
		return g, nil
	}
	g, err := cuda.Open(id, t.cfg.TF32)
	if err != nil {
		return nil, fmt.Errorf("train: Config.GPUs: %w", err)
	}
	if t.gpu.open == nil {
		t.gpu.open = map[int]*cuda.GPU{}
	}
	g.SetFastest(t.cfg.GPUFastest)
	t.gpu.open[id] = g
	return g, nil
}

// onGPU runs the net of local rank i (rank r) on its GPU, and says so on
// the run's output for the first: the GPU, its math and the layers that
// stay on the CPU.
func (t *Trainer) onGPU(net *model.Net, i, r int) error {
	if len(t.cfg.GPUs) == 0 {
		return nil
	}
	id := t.cfg.GPUs[i%len(t.cfg.GPUs)]
	g, err := t.openGPU(id)
	if err != nil {
		return err
	}
	ex, err := gpunet.New(g, net, gpunet.Options{Seed: t.cfg.Seed + uint64(r)})
	if err != nil {
		return fmt.Errorf("train: rank %d on GPU %d: %w", r, id, err)
	}
	t.gpu.nets = append(t.gpu.nets, ex)
	if len(t.gpu.nets) == 1 {
		in, _ := cuda.Probe()
		math := "fp32"
		if t.cfg.TF32 {
			math = "TF32 tensor cores for float32 products"
		}
		fmt.Fprintf(t.out, "train: rank %d on %s; driver CUDA %s, cuBLAS %s, cuDNN %s; %s\n", r, g.Device, in.DriverVersion(), in.CUBLAS, in.CUDNN, math)
		if len(ex.Fallback) > 0 {
			fmt.Fprintf(t.out, "train: on the CPU, with their blobs copied across: %v\n", ex.Fallback)
		}
	}
	return nil
}

// testsOnGPU runs rank 0's TEST nets on the first GPU.
func (t *Trainer) testsOnGPU() error {
	if len(t.cfg.GPUs) == 0 {
		return nil
	}
	for _, net := range append([]*model.Net{t.test}, t.extra...) {
		if net == nil {
			continue
		}
		g, err := t.openGPU(t.cfg.GPUs[0])
		if err != nil {
			return err
		}
		ex, err := gpunet.New(g, net, gpunet.Options{Seed: t.cfg.Seed})
		if err != nil {
			return fmt.Errorf("train: TEST net on GPU %d: %w", t.cfg.GPUs[0], err)
		}
		t.gpu.nets = append(t.gpu.nets, ex)
	}
	return nil
}

// closeNets gives the nets back to the CPU and frees their device memory.
func (s *gpuState) closeNets() {
	for _, ex := range s.nets {
		ex.Close()
	}
	s.nets = nil
}

// release closes the nets and the GPUs.
func (s *gpuState) release() {
	s.closeNets()
	for id, g := range s.open {
		g.Close()
		delete(s.open, id)
	}
}
