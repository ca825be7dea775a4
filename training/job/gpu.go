package job

import (
	"fmt"

	"dsgd/engine/cuda"
)

// SolverGPU is what the solver's solver_mode: GPU and device_id ask for
// when the command line names no GPU, read as Caffe's tool reads them
// (only a solver_mode written in the file counts): ids is []int{device_id}
// when that GPU is there and the run can use it; otherwise ids is nil and
// the run trains on the CPU, as most published Caffe solvers say GPU and
// a user without one still expects them to train. cpuOnly, when not
// empty, names what makes this run CPU-only (a flag that the GPU engine
// does not take). note says what was decided and why, for the user; it
// is empty when the solver asks for no GPU.
func (j *Job) SolverGPU(cpuOnly string) (ids []int, note string) {
	sd := j.Solver
	if sd == nil || !sd.GPU {
		return nil, ""
	}
	ask := fmt.Sprintf("%s: solver_mode: GPU (device_id %d)", sd.GPUAt, sd.DeviceID)
	if cpuOnly != "" {
		return nil, fmt.Sprintf("%s: %s runs on the CPU only; training on the CPU", ask, cpuOnly)
	}
	in, err := cuda.Probe()
	if err != nil {
		return nil, fmt.Sprintf("%s, but %v; training on the CPU", ask, err)
	}
	if sd.DeviceID >= len(in.Devices) {
		return nil, fmt.Sprintf("%s, but this machine has %d GPU(s); training on the CPU (--gpu IDS chooses others)", ask, len(in.Devices))
	}
	d := in.Devices[sd.DeviceID]
	return []int{sd.DeviceID}, fmt.Sprintf("%s: training on %s; driver CUDA %s, cuBLAS %s, cuDNN %s", ask, d, in.DriverVersion(), in.CUBLAS, in.CUDNN)
}
