package data

import (
	"math"
	"math/rand/v2"
)

// BBox is SSD's NormalizedBBox as its data layer moves it: corners
// relative to the image (0..1 inside it), whether the object is marked
// difficult, and the size the fork caches in the message once a box has
// been clipped (HasSize).
type BBox struct {
	XMin, YMin, XMax, YMax float32
	Difficult              bool
	Size                   float32
	HasSize                bool
}

// size is the fork's BBoxSize for a normalised box: 0 for an inverted
// box, the cached size when there is one, else width × height.
func (b BBox) size() float32 {
	if b.XMax < b.XMin || b.YMax < b.YMin {
		return 0
	}
	if b.HasSize {
		return b.Size
	}
	return (b.XMax - b.XMin) * (b.YMax - b.YMin)
}

// clip is the fork's ClipBBox: every corner into [0, 1], the size cached.
func (b BBox) clip() BBox {
	c := BBox{
		XMin: min(max(b.XMin, 0), 1), YMin: min(max(b.YMin, 0), 1),
		XMax: min(max(b.XMax, 0), 1), YMax: min(max(b.YMax, 0), 1),
		Difficult: b.Difficult,
	}
	c.Size, c.HasSize = c.size(), true
	return c
}

// intersect is the fork's IntersectBBox: the overlap of a and b, or the
// zero box when they do not meet.
func intersect(a, b BBox) BBox {
	if b.XMin > a.XMax || b.XMax < a.XMin || b.YMin > a.YMax || b.YMax < a.YMin {
		return BBox{}
	}
	return BBox{XMin: max(a.XMin, b.XMin), YMin: max(a.YMin, b.YMin), XMax: min(a.XMax, b.XMax), YMax: min(a.YMax, b.YMax)}
}

// jaccard is the fork's JaccardOverlap of two normalised boxes.
func jaccard(a, b BBox) float32 {
	in := intersect(a, b)
	w, h := in.XMax-in.XMin, in.YMax-in.YMin
	if w <= 0 || h <= 0 {
		return 0
	}
	s := w * h
	return s / (a.size() + b.size() - s)
}

// coverage is the fork's BBoxCoverage: the part of a that b covers.
func coverage(a, b BBox) float32 {
	s := intersect(a, b).size()
	if s <= 0 {
		return 0
	}
	return s / a.size()
}

// locate is the fork's LocateBBox: b, given relative to src, in src's
// frame.
func locate(src, b BBox) BBox {
	w, h := src.XMax-src.XMin, src.YMax-src.YMin
	return BBox{
		XMin: src.XMin + b.XMin*w, YMin: src.YMin + b.YMin*h,
		XMax: src.XMin + b.XMax*w, YMax: src.YMin + b.YMax*h,
		Difficult: b.Difficult,
	}
}

// project is the fork's ProjectBBox: b relative to src, clipped; false
// when nothing of b lies inside src.
func project(src, b BBox) (BBox, bool) {
	if b.XMin >= src.XMax || b.XMax <= src.XMin || b.YMin >= src.YMax || b.YMax <= src.YMin {
		return BBox{}, false
	}
	w, h := src.XMax-src.XMin, src.YMax-src.YMin
	p := BBox{
		XMin: (b.XMin - src.XMin) / w, YMin: (b.YMin - src.YMin) / h,
		XMax: (b.XMax - src.XMin) / w, YMax: (b.YMax - src.YMin) / h,
		Difficult: b.Difficult,
	}.clip()
	return p, p.size() > 0
}

// EmitType is SSD's EmitConstraint.EmitType: which boxes survive a crop.
type EmitType int

// The emit types.
const (
	// EmitCenter keeps a box whose centre lies in the crop.
	EmitCenter EmitType = iota
	// EmitMinOverlap keeps a box the crop covers more than EmitOverlap
	// of.
	EmitMinOverlap
)

// EmitConstraint is SSD's transform_param.emit_constraint.
type EmitConstraint struct {
	Type    EmitType
	Overlap float32
}

// meets is the fork's MeetEmitConstraint of box b for crop src.
func (e EmitConstraint) meets(src, b BBox) bool {
	if e.Type == EmitCenter {
		xc, yc := (b.XMin+b.XMax)/2, (b.YMin+b.YMax)/2
		return xc >= src.XMin && xc <= src.XMax && yc >= src.YMin && yc <= src.YMax
	}
	return coverage(b, src) > e.Overlap
}

// BatchSampler is one of SSD's annotated_data_param.batch_sampler: up to
// MaxSample crops out of MaxTrials draws of scale and aspect ratio that
// meet the constraint. A constraint bound is in force when its Has flag
// is set, as the fork tests has_min_jaccard_overlap and the rest.
type BatchSampler struct {
	MinScale, MaxScale               float32
	MinAspect, MaxAspect             float32
	MaxSample                        int
	HasMaxSample                     bool
	MaxTrials                        int
	MinJaccard, MaxJaccard           float32
	MinSampleCov, MaxSampleCov       float32
	MinObjectCov, MaxObjectCov       float32
	HasMinJaccard, HasMaxJaccard     bool
	HasMinSampleCov, HasMaxSampleCov bool
	HasMinObjectCov, HasMaxObjectCov bool
}

// uniform is caffe_rng_uniform for one value: a float32 in [lo, hi).
func uniform(rng *rand.Rand, lo, hi float32) float32 {
	return lo + (hi-lo)*rng.Float32()
}

// satisfies is the fork's SatisfySampleConstraint: true without any
// constraint, else when one object box passes every bound given.
func (s *BatchSampler) satisfies(sample BBox, objects []BBox) bool {
	hasJ := s.HasMinJaccard || s.HasMaxJaccard
	hasS := s.HasMinSampleCov || s.HasMaxSampleCov
	hasO := s.HasMinObjectCov || s.HasMaxObjectCov
	if !hasJ && !hasS && !hasO {
		return true
	}
	found := false
	for _, o := range objects {
		if hasJ {
			j := jaccard(sample, o)
			if s.HasMinJaccard && j < s.MinJaccard || s.HasMaxJaccard && j > s.MaxJaccard {
				continue
			}
			found = true
		}
		if hasS {
			c := coverage(sample, o)
			if s.HasMinSampleCov && c < s.MinSampleCov || s.HasMaxSampleCov && c > s.MaxSampleCov {
				continue
			}
			found = true
		}
		if hasO {
			c := coverage(o, sample)
			if s.HasMinObjectCov && c < s.MinObjectCov || s.HasMaxObjectCov && c > s.MaxObjectCov {
				continue
			}
			found = true
		}
		if found {
			return true
		}
	}
	return found
}

// sampleBox is the fork's SampleBBox: a box of random scale and aspect
// ratio (kept inside the unit square) at a random place.
func (s *BatchSampler) sampleBox(rng *rand.Rand) BBox {
	scale := uniform(rng, s.MinScale, s.MaxScale)
	ar := uniform(rng, s.MinAspect, s.MaxAspect)
	ar = max(ar, float32(float64(scale)*float64(scale)))
	ar = min(ar, float32(1/(float64(scale)*float64(scale))))
	sq := float32(math.Sqrt(float64(ar)))
	w, h := scale*sq, scale/sq
	x := uniform(rng, 0, 1-w)
	y := uniform(rng, 0, 1-h)
	return BBox{XMin: x, YMin: y, XMax: x + w, YMax: y + h}
}

// generate is the fork's GenerateSamples on the whole image: the boxes
// that met the constraint, appended to out.
func (s *BatchSampler) generate(rng *rand.Rand, objects []BBox, out []BBox) []BBox {
	found := 0
	unit := BBox{XMax: 1, YMax: 1}
	for range s.MaxTrials {
		if s.HasMaxSample && found >= s.MaxSample {
			break
		}
		b := locate(unit, s.sampleBox(rng))
		if s.satisfies(b, objects) {
			found++
			out = append(out, b)
		}
	}
	return out
}
