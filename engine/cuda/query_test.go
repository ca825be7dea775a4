package cuda

import (
	"errors"
	"strings"
	"testing"
)

// TestQueryProps checks which attribute each of device_query's lines
// reads, and Caffe's layout, with an H100's values standing in for a
// driver's.
func TestQueryProps(t *testing.T) {
	vals := map[int]int{
		attrMaxThreadsPerBlock: 1024, attrMaxBlockDimX: 1024, attrMaxBlockDimX + 1: 1024, attrMaxBlockDimX + 2: 64,
		attrMaxGridDimX: 2147483647, attrMaxGridDimX + 1: 65535, attrMaxGridDimX + 2: 65535,
		attrSharedPerBlock: 49152, attrConstMemory: 65536, attrWarpSize: 32, attrMaxPitch: 2147483647,
		attrRegsPerBlock: 65536, attrClockRate: 1980000, attrTextureAlignment: 512, attrGPUOverlap: 1,
		attrMultiprocessors: 132, attrKernelTimeout: 0, attrMemoryClockRate: 2619000, attrMemoryBusWidth: 5120,
		attrL2CacheSize: 52428800, attrAsyncEngines: 5,
	}
	d := Device{Index: 0, Name: "NVIDIA H100 80GB HBM3", Memory: 85045018624, Major: 9, Minor: 0}
	props, err := queryProps(d, func(a int) (int, error) {
		v, ok := vals[a]
		if !ok {
			t.Fatalf("attribute %d read, not in the table", a)
		}
		return v, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := FormatQuery(props)
	for _, line := range []string{
		"Device id:                     0\n",
		"Major revision number:         9\n",
		"Name:                          NVIDIA H100 80GB HBM3\n",
		"Total global memory:           85045018624\n",
		"Total shared memory per block: 49152\n",
		"Maximum dimension of block:    1024, 1024, 64\n",
		"Maximum dimension of grid:     2147483647, 65535, 65535\n",
		"Clock rate:                    1980000\n",
		"Concurrent copy and execution: Yes\n",
		"Number of multiprocessors:     132\n",
		"Kernel execution timeout:      No\n",
		"L2 cache size:                 52428800\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("query lacks %q:\n%s", line, got)
		}
	}
	if !strings.HasPrefix(got, "Device id:") || strings.Count(got, "\n") != len(props) {
		t.Errorf("query is not one line per property in Caffe's order:\n%s", got)
	}

	_, err = queryProps(d, func(a int) (int, error) {
		if a == attrWarpSize {
			return 0, errors.New("CUDA error 101")
		}
		return vals[a], nil
	})
	if err == nil || !strings.Contains(err.Error(), "CUDA error 101") {
		t.Errorf("a failed attribute read: err %v, want the driver's error", err)
	}
}
