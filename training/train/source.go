package train

import (
	"context"
	"fmt"

	"dsgd/data"
	"dsgd/engine/model"
	"dsgd/engine/tensor"
)

// Loader adapts a data.Loader to a Source: top 0 receives the images, top
// 1 (if present) the labels, as a Caffe Data layer's tops.
type Loader struct {
	L *data.Loader
	// Name is the data layer's name, and Source where it reads from, for
	// error messages.
	Name, Source string
	// uses, when set, are the layers that read the label top as class
	// indices: Fill checks each batch's labels against them, naming the
	// record a bad one came from (a streamed database's labels are
	// known only as they are read).
	uses []model.LabelUse
}

// Fill copies the loader's next batch into the tops.
func (s Loader) Fill(ctx context.Context, tops []*tensor.Blob) error {
	b, err := s.L.Next(ctx)
	if err != nil {
		return fmt.Errorf("data layer %q: %w", s.Name, err)
	}
	defer s.L.Release(b)
	if len(tops) == 0 || (len(tops) > 2 && len(tops) != len(b.Extra)+1) {
		return fmt.Errorf("data layer %q: has %d tops; a Data layer has 1 (data) or 2 (data, label)", s.Name, len(tops))
	}
	if len(tops[0].Data) != len(b.Data) {
		return fmt.Errorf("data layer %q: batch has shape %v but blob %q has shape %v", s.Name, b.Shape, tops[0].Name, tops[0].Shape)
	}
	copy(tops[0].Data, b.Data)
	if len(b.Extra) > 0 {
		// HDF5Data's further tops, as they are in the files.
		for i, t := range tops[1:] {
			if len(t.Data) != len(b.Extra[i]) {
				return fmt.Errorf("data layer %q: %d values for top %q but its blob has shape %v", s.Name, len(b.Extra[i]), t.Name, t.Shape)
			}
			copy(t.Data, b.Extra[i])
		}
		if len(tops) > 1 && s.uses != nil {
			if err := model.CheckLabels(tops[1].Data, s.uses); err != nil {
				return fmt.Errorf("data layer %q (source %s): top %q: %w", s.Name, s.Source, tops[1].Name, err)
			}
		}
		return nil
	}
	if len(tops) == 2 {
		if len(tops[1].Data) != len(b.Labels) {
			return fmt.Errorf("data layer %q: %d labels but blob %q has shape %v", s.Name, len(b.Labels), tops[1].Name, tops[1].Shape)
		}
		copy(tops[1].Data, b.Labels)
		if i, err := model.BadLabel(b.Labels, s.uses); err != nil {
			where := fmt.Sprintf("data layer %q", s.Name)
			if s.Source != "" {
				where += fmt.Sprintf(" (source %s)", s.Source)
			}
			return fmt.Errorf("%s: %s: %w", where, s.L.ItemName(b.Index[i]), err)
		}
	}
	return nil
}

// labelChecked is a Source whose label top is checked against the layers
// that read it, after every fill.
type labelChecked struct {
	Source
	top  int // the index of the label top in the feed's tops
	name string
	uses []model.LabelUse
}

// Fill fills the tops, then checks the labels.
func (s labelChecked) Fill(ctx context.Context, tops []*tensor.Blob) error {
	if err := s.Source.Fill(ctx, tops); err != nil {
		return err
	}
	if s.top < len(tops) {
		if err := model.CheckLabels(tops[s.top].Data, s.uses); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// checkLabels returns feeds with every Source that fills a blob net reads
// as class labels wrapped to check them.
func checkLabels(net *model.Net, feeds []Feed) []Feed {
	uses := net.LabelUses()
	out := make([]Feed, len(feeds))
	for i, f := range feeds {
		out[i] = f
		for j, top := range f.Tops {
			if u := uses[top]; len(u) > 0 {
				if l, ok := f.Source.(Loader); ok && j == 1 {
					l.uses = u
					out[i].Source = l
					continue
				}
				out[i].Source = labelChecked{Source: f.Source, top: j, name: fmt.Sprintf("blob %q", top), uses: u}
			}
		}
	}
	return out
}
