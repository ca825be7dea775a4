package data

import (
	"fmt"
	"math"
	"path/filepath"
)

// ReadHDF5List reads the .h5 files a Caffe HDF5Data source lists (one path
// a line) into a float Dataset. As in Caffe, the datasets are named by the
// layer's tops: dataName (N×C×H×W, or N×D read as D×1×1) and labelName
// (N or N×1, whole numbers 0..MaxLabel for dsgd's classifiers; "" for none,
// giving labels 0). All files must agree on the item shape. Relative paths
// are taken as written, from the working directory, as Caffe does.
func ReadHDF5List(list, dataName, labelName string) (*Dataset, error) {
	files, err := listLines(list)
	if err != nil {
		return nil, err
	}
	d := &Dataset{Name: list, Untransformed: true}
	maxL := 0
	for _, p := range files {
		vals, dims, labels, err := readH5File(p, dataName, labelName)
		if err != nil {
			return nil, fmt.Errorf("HDF5Data source %s: %w", list, err)
		}
		shape := [3]int{1, 1, 1}
		switch len(dims) {
		case 2:
			shape[0] = dims[1]
		case 4:
			shape = [3]int{dims[1], dims[2], dims[3]}
		default:
			return nil, fmt.Errorf("HDF5Data source %s: %s: data has shape %v; want NxCxHxW or NxD", list, p, dims)
		}
		if d.N == 0 {
			d.C, d.H, d.W = shape[0], shape[1], shape[2]
		} else if shape != [3]int{d.C, d.H, d.W} {
			return nil, fmt.Errorf("HDF5Data source %s: %s holds %dx%dx%d items but %s holds %dx%dx%d", list, p, shape[0], shape[1], shape[2], files[0], d.C, d.H, d.W)
		}
		for i, l := range labels {
			if l != float32(math.Trunc(float64(l))) || l < 0 || l > MaxLabel {
				return nil, fmt.Errorf("HDF5Data source %s: %s: label %d is %v; dsgd's HDF5Data reads class labels, whole numbers 0..%d", list, p, i, l, MaxLabel)
			}
			d.Labels = append(d.Labels, int32(l))
			maxL = max(maxL, int(l))
		}
		if labelName == "" {
			d.Labels = append(d.Labels, make([]int32, dims[0])...)
		}
		d.Floats = append(d.Floats, vals...)
		d.N += dims[0]
		for i := range dims[0] {
			d.Keys = append(d.Keys, fmt.Sprintf("%s item %d", filepath.Base(p), i))
		}
	}
	if d.N == 0 {
		return nil, fmt.Errorf("HDF5Data source %s: the files hold no items", list)
	}
	d.Classes = maxL + 1
	return d, nil
}
