package data

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
)

// ReadHDF5List reads an HDF5Data source with the tops dataName and, unless
// it is "", labelName: ReadHDF5Tops with those tops.
func ReadHDF5List(list, dataName, labelName string) (*Dataset, error) {
	tops := []string{dataName}
	if labelName != "" {
		tops = append(tops, labelName)
	}
	return ReadHDF5Tops(list, tops)
}

// ReadHDF5Tops reads the .h5 files a Caffe HDF5Data source lists (one path
// a line) into a float Dataset. As in Caffe, each top reads the dataset of
// its name, of any rank and any float values, and every dataset of a file
// holds the same number of items (its first dimension); all files agree on
// each dataset's item shape. Relative paths are taken as written, from the
// working directory, as Caffe does.
//
// The first top is the Dataset's data (an item of rank 3 is C×H×W; any
// other rank is kept in DataItem). With exactly two tops whose second
// holds whole numbers 0..MaxLabel, one per item (N or N×1), the second is
// the class labels; otherwise every top after the first is an Extra
// column, filled into Batch.Extra as it is (regression targets, a
// recurrent net's sequences and continuation flags).
func ReadHDF5Tops(list string, tops []string) (*Dataset, error) {
	if len(tops) == 0 {
		return nil, fmt.Errorf("HDF5Data source %s: the layer has no top", list)
	}
	files, err := listLines(list)
	if err != nil {
		return nil, err
	}
	vals := make([][][]float32, len(files))
	dims := make([][][]int, len(files))
	for i, p := range files {
		vals[i], dims[i], err = readH5File(p, tops)
		if err != nil {
			return nil, fmt.Errorf("HDF5Data source %s: %w", list, err)
		}
		for t := range tops {
			if !slices.Equal(dims[i][t][1:], dims[0][t][1:]) {
				return nil, fmt.Errorf("HDF5Data source %s: %s: dataset %q holds items of shape %v but %s holds %v", list, p, tops[t], dims[i][t][1:], files[0], dims[0][t][1:])
			}
		}
	}
	classes := len(tops) == 2 && len(dims[0][1]) <= 2 && (len(dims[0][1]) == 1 || dims[0][1][1] == 1)
	for i := range files {
		for _, l := range vals[i][1:] {
			for _, v := range l {
				if v != float32(math.Trunc(float64(v))) || v < 0 || v > MaxLabel {
					classes = false
				}
			}
		}
	}
	d := &Dataset{Name: list, Untransformed: true}
	item := dims[0][0][1:]
	switch len(item) {
	case 3:
		d.C, d.H, d.W = item[0], item[1], item[2]
	default:
		d.C, d.H, d.W = prod(item), 1, 1
		d.DataItem = slices.Clone(item)
	}
	if !classes {
		for t, name := range tops[1:] {
			d.Extra = append(d.Extra, Column{Name: name, Item: slices.Clone(dims[0][t+1][1:])})
		}
	}
	maxL := 0
	for i, p := range files {
		n := dims[i][0][0]
		switch {
		case classes:
			for _, l := range vals[i][1] {
				d.Labels = append(d.Labels, int32(l))
				maxL = max(maxL, int(l))
			}
		default:
			d.Labels = append(d.Labels, make([]int32, n)...)
			for t := range d.Extra {
				d.Extra[t].Values = append(d.Extra[t].Values, vals[i][t+1]...)
			}
		}
		d.Floats = append(d.Floats, vals[i][0]...)
		d.N += n
		for k := range n {
			d.Keys = append(d.Keys, fmt.Sprintf("%s item %d", filepath.Base(p), k))
		}
	}
	if d.N == 0 {
		return nil, fmt.Errorf("HDF5Data source %s: the files hold no items", list)
	}
	d.Classes = maxL + 1
	return d, nil
}

func prod(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}
