package job

import (
	"strings"
	"testing"

	"dsgd/caffe/caffedef"
	"dsgd/engine/cuda"
)

// TestSolverGPU checks solver_mode: GPU as Caffe's tool reads it: no
// solver_mode, nothing; a CPU-only flag, the CPU naming the flag; else
// GPU device_id where it is there, the CPU with the reason where not.
func TestSolverGPU(t *testing.T) {
	_, probeErr := cuda.Probe()
	gpu := func(device int) *Job {
		return &Job{Solver: &caffedef.SolverDef{GPU: true, DeviceID: device, GPUAt: "s.prototxt:3:1"}}
	}
	if ids, note := (&Job{Solver: &caffedef.SolverDef{}}).SolverGPU(""); ids != nil || note != "" {
		t.Errorf("no solver_mode: ids %v note %q, want neither", ids, note)
	}
	if ids, note := (&Job{}).SolverGPU(""); ids != nil || note != "" {
		t.Errorf("no solver: ids %v note %q, want neither", ids, note)
	}
	ids, note := gpu(0).SolverGPU("--reduce exact")
	if ids != nil || !strings.Contains(note, "s.prototxt:3:1: solver_mode: GPU (device_id 0): --reduce exact runs on the CPU only; training on the CPU") {
		t.Errorf("CPU-only flag: ids %v note %q", ids, note)
	}
	ids, note = gpu(1 << 20).SolverGPU("")
	if ids != nil || !strings.HasSuffix(note, "training on the CPU") && !strings.Contains(note, "training on the CPU (--gpu IDS") {
		t.Errorf("device_id past the GPUs: ids %v note %q, want the CPU", ids, note)
	}
	ids, note = gpu(0).SolverGPU("")
	if probeErr != nil {
		if ids != nil || !strings.Contains(note, probeErr.Error()) || !strings.HasSuffix(note, "training on the CPU") {
			t.Errorf("no GPU (%v): ids %v note %q, want the CPU and the reason", probeErr, ids, note)
		}
		return
	}
	if len(ids) != 1 || ids[0] != 0 || !strings.Contains(note, "training on GPU 0:") {
		t.Errorf("with a GPU: ids %v note %q, want GPU 0", ids, note)
	}
}
