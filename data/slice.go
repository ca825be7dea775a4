package data

// sliceState is where a Slice loader is in the global sequence.
type sliceState struct {
	rank, world int64
	next        int64 // the global batch the next fill is
	offset      int64 // LoaderConfig.Offset
}

// fillSlice writes this rank's slice of the next global batch into b
// (LoaderConfig.Slice): positions offset + (g·world + rank)·B … +B of the
// sequence of epochs, each epoch a permutation of every image. Each
// image's crop and mirror are drawn from its position alone.
func (s *sampler) fillSlice(b *Batch) error {
	st := s.slice
	n := int64(len(s.shard))
	B := int64(s.batch)
	g := st.next
	first := st.offset + (g*st.world+st.rank)*B
	b.Seq, b.Epoch = g, int(first/n)
	for i := int64(0); i < B; i++ {
		p := first + i
		if e := int(p / n); e != s.epoch {
			s.startEpoch(e)
		}
		idx := s.order[p%n]
		s.augPCG.Seed(mix(s.seed, tagAugment), uint64(p))
		if err := s.place(b, int(i), idx); err != nil {
			return err
		}
	}
	st.next++
	s.seq++
	return s.decodePending(b.Data, s.ds.C*s.t.oh*s.t.ow)
}
