package cuda

import (
	"fmt"
	"strconv"
	"strings"
)

// Property is one line of a device query: a label and its value.
type Property struct {
	Label, Value string
}

// The CUdevice_attribute values (cuda.h) that device_query reads.
const (
	attrMaxThreadsPerBlock = 1
	attrMaxBlockDimX       = 2 // Y, Z follow
	attrMaxGridDimX        = 5 // Y, Z follow
	attrSharedPerBlock     = 8
	attrConstMemory        = 9
	attrWarpSize           = 10
	attrMaxPitch           = 11
	attrRegsPerBlock       = 12
	attrClockRate          = 13
	attrTextureAlignment   = 14
	attrGPUOverlap         = 15
	attrMultiprocessors    = 16
	attrKernelTimeout      = 17
	attrMemoryClockRate    = 36
	attrMemoryBusWidth     = 37
	attrL2CacheSize        = 38
	attrAsyncEngines       = 40
)

// queryProps lists device d's properties with attr reading a device
// attribute: Caffe's DeviceQuery lines first (its labels, its units:
// bytes and kHz), then the memory clock, bus width, L2 cache and copy
// engines.
func queryProps(d Device, attr func(int) (int, error)) ([]Property, error) {
	var err error
	get := func(a int) int {
		if err != nil {
			return 0
		}
		var v int
		v, err = attr(a)
		return v
	}
	yesNo := func(v int) string {
		if v != 0 {
			return "Yes"
		}
		return "No"
	}
	dims := func(a int) string {
		return fmt.Sprintf("%d, %d, %d", get(a), get(a+1), get(a+2))
	}
	itoa := strconv.Itoa
	props := []Property{
		{"Device id", itoa(d.Index)},
		{"Major revision number", itoa(d.Major)},
		{"Minor revision number", itoa(d.Minor)},
		{"Name", d.Name},
		{"Total global memory", strconv.FormatInt(d.Memory, 10)},
		{"Total shared memory per block", itoa(get(attrSharedPerBlock))},
		{"Total registers per block", itoa(get(attrRegsPerBlock))},
		{"Warp size", itoa(get(attrWarpSize))},
		{"Maximum memory pitch", itoa(get(attrMaxPitch))},
		{"Maximum threads per block", itoa(get(attrMaxThreadsPerBlock))},
		{"Maximum dimension of block", dims(attrMaxBlockDimX)},
		{"Maximum dimension of grid", dims(attrMaxGridDimX)},
		{"Clock rate", itoa(get(attrClockRate))},
		{"Total constant memory", itoa(get(attrConstMemory))},
		{"Texture alignment", itoa(get(attrTextureAlignment))},
		{"Concurrent copy and execution", yesNo(get(attrGPUOverlap))},
		{"Number of multiprocessors", itoa(get(attrMultiprocessors))},
		{"Kernel execution timeout", yesNo(get(attrKernelTimeout))},
		{"Memory clock rate (kHz)", itoa(get(attrMemoryClockRate))},
		{"Memory bus width (bits)", itoa(get(attrMemoryBusWidth))},
		{"L2 cache size", itoa(get(attrL2CacheSize))},
		{"Copy engines", itoa(get(attrAsyncEngines))},
	}
	if err != nil {
		return nil, err
	}
	return props, nil
}

// FormatQuery writes props as Caffe's device_query lays them out: each
// label padded to one column, then its value.
func FormatQuery(props []Property) string {
	w := 0
	for _, p := range props {
		w = max(w, len(p.Label)+1)
	}
	var b strings.Builder
	for _, p := range props {
		fmt.Fprintf(&b, "%-*s %s\n", w, p.Label+":", p.Value)
	}
	return b.String()
}
