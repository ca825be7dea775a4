package data

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"

	"dsgd/engine/tensor"
)

// A window file (Caffe's WindowData source, as R-CNN's scripts write it)
// lists images and, for each, the boxes to sample from:
//
//	# image_index
//	img_path
//	channels
//	height
//	width
//	num_windows
//	class_index overlap x1 y1 x2 y2    (num_windows lines)
//
// Tokens are separated by any white space, as C++'s >> reads them; x1..y2
// are inclusive 0-based pixel coordinates.

// WindowImage is one image of a window file.
type WindowImage struct {
	// Path is the image's path with the layer's root_folder prefixed.
	Path string
	// C, H and W are the channels, height and width the file declares.
	C, H, W int
	// Line is the line of the image's "#" in the window file.
	Line int
}

// Window is one box of a window file.
type Window struct {
	// Image indexes WindowFile.Images.
	Image int
	// Label is the class: the file's class_index for a foreground window,
	// 0 for a background one (Caffe forces it).
	Label int
	// Overlap is the box's overlap with the ground truth.
	Overlap float32
	// X1, Y1, X2, Y2 are the inclusive corners.
	X1, Y1, X2, Y2 int
	// Line is the window's line in the window file.
	Line int
}

// WindowFile is a parsed window file, its windows split as Caffe's
// WindowDataLayer splits them: overlap >= fg_threshold is foreground (its
// class must be positive), overlap < bg_threshold is background (label
// 0), anything between is dropped.
type WindowFile struct {
	Name   string
	Images []WindowImage
	Fg, Bg []Window
}

// maxWindowFileImages bounds what a window file may declare, so that a
// corrupt count cannot make the parser allocate without limit.
const maxWindowFileImages = 1 << 26

// windowTokens reads white-space separated tokens and the line each
// starts on.
type windowTokens struct {
	r    *bufio.Reader
	line int
	name string
}

func (t *windowTokens) next() (tok string, line int, err error) {
	var b []byte
	for {
		c, err := t.r.ReadByte()
		if err == io.EOF {
			if len(b) > 0 {
				return string(b), line, nil
			}
			return "", t.line, io.EOF
		}
		if err != nil {
			return "", t.line, fmt.Errorf("%s: %w", t.name, err)
		}
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
			if len(b) > 0 {
				// The separator is read again by the next call, which
				// counts its line.
				_ = t.r.UnreadByte()
				return string(b), line, nil
			}
			if c == '\n' {
				t.line++
			}
			continue
		}
		if len(b) == 0 {
			line = t.line
		}
		if len(b) >= 4096 {
			return "", line, fmt.Errorf("%s:%d: a token longer than 4096 bytes; this is not a window file", t.name, line)
		}
		b = append(b, c)
	}
}

// ParseWindowFile reads a window file named name (for errors) from r.
// root is prefixed to every image path, as Caffe's root_folder.
// fgThreshold and bgThreshold split the windows.
func ParseWindowFile(r io.Reader, name, root string, fgThreshold, bgThreshold float32) (*WindowFile, error) {
	t := &windowTokens{r: bufio.NewReader(r), line: 1, name: name}
	wf := &WindowFile{Name: name}
	// want reads one token, or fails naming what was expected.
	want := func(what string) (string, int, error) {
		tok, line, err := t.next()
		if err == io.EOF {
			return "", line, fmt.Errorf("%s:%d: the file ends where %s was expected", name, line, what)
		}
		return tok, line, err
	}
	wantInt := func(what string, lo, hi int) (int, int, error) {
		tok, line, err := want(what)
		if err != nil {
			return 0, line, err
		}
		v, err := strconv.Atoi(tok)
		if err != nil || v < lo || v > hi {
			return 0, line, fmt.Errorf("%s:%d: %s is %q; want an integer in [%d, %d]", name, line, what, tok, lo, hi)
		}
		return v, line, nil
	}
	for {
		tok, line, err := t.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if tok != "#" {
			return nil, fmt.Errorf("%s:%d: %q where an image's \"# image_index\" header was expected", name, line, tok)
		}
		idx, iline, err := wantInt("image_index", 0, maxWindowFileImages)
		if err != nil {
			return nil, err
		}
		if idx != len(wf.Images) {
			// Caffe looks images up by this index in file order.
			return nil, fmt.Errorf("%s:%d: image_index %d, but this is image %d of the file; Caffe indexes images by their order, so they must be numbered 0, 1, 2 and so on", name, iline, idx, len(wf.Images))
		}
		path, _, err := want("the image path")
		if err != nil {
			return nil, err
		}
		img := WindowImage{Path: root + path, Line: line}
		var cline int
		if img.C, cline, err = wantInt("channels", 1, 4); err != nil {
			return nil, err
		}
		if img.C != 3 {
			return nil, fmt.Errorf("%s:%d: image %s declares %d channels; Caffe's WindowData reads every image in colour (3 channels)", name, cline, path, img.C)
		}
		if img.H, _, err = wantInt("height", 1, maxImageSide); err != nil {
			return nil, err
		}
		if img.W, _, err = wantInt("width", 1, maxImageSide); err != nil {
			return nil, err
		}
		n, _, err := wantInt("num_windows", 0, maxWindowFileImages)
		if err != nil {
			return nil, err
		}
		for range n {
			var w Window
			var wline int
			if w.Label, wline, err = wantInt("class_index", 0, 1<<24-1); err != nil {
				return nil, err
			}
			w.Image, w.Line = idx, wline
			tok, oline, err := want("overlap")
			if err != nil {
				return nil, err
			}
			ov, perr := strconv.ParseFloat(tok, 32)
			if perr != nil || math.IsNaN(ov) || ov < 0 || ov > 1 {
				return nil, fmt.Errorf("%s:%d: overlap is %q; want a number in [0, 1]", name, oline, tok)
			}
			w.Overlap = float32(ov)
			coords := [4]*int{&w.X1, &w.Y1, &w.X2, &w.Y2}
			for k, what := range []string{"x1", "y1", "x2", "y2"} {
				if *coords[k], _, err = wantInt(what, -maxImageSide, 2*maxImageSide); err != nil {
					return nil, err
				}
			}
			if w.X2 < w.X1 || w.Y2 < w.Y1 {
				return nil, fmt.Errorf("%s:%d: window (%d,%d)-(%d,%d) is empty: x2 < x1 or y2 < y1", name, wline, w.X1, w.Y1, w.X2, w.Y2)
			}
			switch {
			case w.Overlap >= fgThreshold:
				if w.Label <= 0 {
					return nil, fmt.Errorf("%s:%d: foreground window (overlap %g >= fg_threshold %g) has class %d; Caffe needs a foreground class above 0 (0 is background)", name, wline, w.Overlap, fgThreshold, w.Label)
				}
				wf.Fg = append(wf.Fg, w)
			case w.Overlap < bgThreshold:
				w.Label, w.Overlap = 0, 0
				wf.Bg = append(wf.Bg, w)
			}
		}
		wf.Images = append(wf.Images, img)
	}
	if len(wf.Images) == 0 {
		return nil, fmt.Errorf("%s: the window file is empty", name)
	}
	return wf, nil
}

// WindowConfig configures a WindowData layer's source.
type WindowConfig struct {
	// Name is the layer's name, for errors.
	Name string
	// Source is the window file; RootFolder prefixes its image paths.
	Source, RootFolder string
	// BatchSize is the number of windows a batch holds.
	BatchSize int
	// FgThreshold, BgThreshold and FgFraction are window_data_param's
	// (Caffe's defaults 0.5, 0.5, 0.25).
	FgThreshold, BgThreshold, FgFraction float32
	// ContextPad is the padding, in output pixels, of image context around
	// each window.
	ContextPad int
	// Square is crop_mode "square": the box is made square (its longer
	// side) before warping; otherwise ("warp") it is warped as it is.
	Square bool
	// CacheImages keeps every decoded image in memory.
	CacheImages bool
	// Scale is window_data_param.scale, which Caffe 1.0's WindowData
	// multiplies pixels by (it does not read transform_param.scale); 0
	// means 1.
	Scale float32
	// Transform holds crop_size (the warped windows' side, required),
	// mirror and the mean (mean_file or mean_value). Its Scale must be 0
	// or 1.
	Transform TransformConfig
	// Seed draws the windows and the mirror flips.
	Seed uint64
}

// WindowSource is Caffe's WindowDataLayer: every batch it samples
// batch_size × (1 − fg_fraction) background windows and then the rest
// foreground windows, uniformly with replacement, crops each from its
// image (with context padding, square or warped), resizes it to
// crop_size × crop_size (bilinear), flips it at random when mirror is set,
// subtracts the mean and scales it. Unlike Caffe's other data layers it
// samples at random in every phase, as Caffe does.
type WindowSource struct {
	cfg   WindowConfig
	file  *WindowFile
	crop  int
	scale float32
	// mean is the mean file's C×mh×mw image (nil without one); means holds
	// one mean per channel otherwise.
	mean       []float32
	mh, mw     int
	means      [3]float32
	rng        *rand.Rand
	mu         sync.Mutex
	cache      map[int][]uint8
	cacheShape map[int][2]int
}

// OpenWindows reads cfg's window file and mean and checks them.
func OpenWindows(cfg WindowConfig) (*WindowSource, error) {
	name := fmt.Sprintf("WindowData layer %q", cfg.Name)
	tc := cfg.Transform
	switch {
	case tc.CropSize <= 0:
		return nil, fmt.Errorf("%s: transform_param needs a crop_size: the side every window is warped to", name)
	case cfg.BatchSize <= 0:
		return nil, fmt.Errorf("%s: batch_size %d; want at least 1", name, cfg.BatchSize)
	case 2*cfg.ContextPad >= tc.CropSize:
		return nil, fmt.Errorf("%s: context_pad %d leaves nothing of a %d-pixel crop", name, cfg.ContextPad, tc.CropSize)
	case cfg.ContextPad < 0:
		return nil, fmt.Errorf("%s: context_pad %d is negative", name, cfg.ContextPad)
	case tc.Scale != 0 && tc.Scale != 1:
		return nil, fmt.Errorf("%s: transform_param scale %g: Caffe's WindowData ignores transform_param.scale and multiplies by window_data_param.scale; set scale there", name, tc.Scale)
	case !(cfg.FgFraction >= 0 && cfg.FgFraction <= 1):
		return nil, fmt.Errorf("%s: fg_fraction %g is not in [0, 1]", name, cfg.FgFraction)
	}
	s := &WindowSource{cfg: cfg, crop: tc.CropSize, scale: cfg.Scale}
	if s.scale == 0 {
		s.scale = 1
	}
	if math.IsNaN(float64(s.scale)) || math.IsInf(float64(s.scale), 0) {
		return nil, fmt.Errorf("%s: scale %v is not finite", name, cfg.Scale)
	}
	f, err := os.Open(cfg.Source)
	if err != nil {
		return nil, fmt.Errorf("%s: window file: %w", name, err)
	}
	defer f.Close()
	s.file, err = ParseWindowFile(f, cfg.Source, cfg.RootFolder, cfg.FgThreshold, cfg.BgThreshold)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	nfg := s.numFg()
	if nfg > 0 && len(s.file.Fg) == 0 {
		return nil, fmt.Errorf("%s: %s has no foreground window (overlap >= fg_threshold %g) to draw %d per batch from", name, cfg.Source, cfg.FgThreshold, nfg)
	}
	if cfg.BatchSize-nfg > 0 && len(s.file.Bg) == 0 {
		return nil, fmt.Errorf("%s: %s has no background window (overlap < bg_threshold %g) to draw %d per batch from", name, cfg.Source, cfg.BgThreshold, cfg.BatchSize-nfg)
	}
	switch {
	case tc.MeanFile != "" && len(tc.MeanValue) > 0:
		return nil, fmt.Errorf("%s: transform_param: mean_file and mean_value are mutually exclusive", name)
	case tc.MeanFile != "":
		b, err := ReadBlobProto(tc.MeanFile)
		if err != nil {
			return nil, fmt.Errorf("%s: transform_param: mean_file: %w", name, err)
		}
		shape := b.Shape
		for len(shape) > 3 && shape[0] == 1 {
			shape = shape[1:]
		}
		// Caffe centres the crop in the mean image by its width, for both
		// axes.
		if len(shape) != 3 || shape[0] != 3 || shape[2] < s.crop || (shape[2]-s.crop)/2+s.crop > shape[1] {
			return nil, fmt.Errorf("%s: mean_file %s: mean shape %s does not fit 3-channel %dx%d crops", name, tc.MeanFile, ShapeString(b.Shape), s.crop, s.crop)
		}
		s.mean, s.mh, s.mw = b.Data, shape[1], shape[2]
	case len(tc.MeanValue) == 1:
		s.means = [3]float32{tc.MeanValue[0], tc.MeanValue[0], tc.MeanValue[0]}
	case len(tc.MeanValue) == 3:
		copy(s.means[:], tc.MeanValue)
	case len(tc.MeanValue) != 0:
		return nil, fmt.Errorf("%s: transform_param: %d mean_value entries for 3-channel images; want 1 or 3", name, len(tc.MeanValue))
	}
	if cfg.CacheImages {
		s.cache, s.cacheShape = map[int][]uint8{}, map[int][2]int{}
	}
	s.rng = rand.New(rand.NewPCG(mix(cfg.Seed, tagAugment), mix(cfg.Seed, tagSample)))
	return s, nil
}

// numFg is the number of foreground windows per batch (Caffe truncates).
func (s *WindowSource) numFg() int {
	return int(float32(s.cfg.BatchSize) * s.cfg.FgFraction)
}

// File returns the parsed window file.
func (s *WindowSource) File() *WindowFile { return s.file }

// Shape returns the data top's shape: batch × 3 × crop × crop.
func (s *WindowSource) Shape() tensor.Shape {
	return tensor.Shape{s.cfg.BatchSize, 3, s.crop, s.crop}
}

// image returns image i decoded as 3×h×w BGR bytes.
func (s *WindowSource) image(i int) ([]uint8, int, int, error) {
	if s.cache != nil {
		if p, ok := s.cache[i]; ok {
			sh := s.cacheShape[i]
			return p, sh[0], sh[1], nil
		}
	}
	im := s.file.Images[i]
	b, err := os.ReadFile(im.Path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("WindowData layer %q: image %d (%s:%d): %w", s.cfg.Name, i, s.file.Name, im.Line, err)
	}
	pix, _, h, w, err := DecodeImage(b, 3, 0, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("WindowData layer %q: image %s (%s:%d): %w", s.cfg.Name, im.Path, s.file.Name, im.Line, err)
	}
	if s.cache != nil {
		s.cache[i], s.cacheShape[i] = pix, [2]int{h, w}
	}
	return pix, h, w, nil
}

// Fill writes the next batch: windows into tops[0] (batch×3×crop×crop)
// and their labels into tops[1].
func (s *WindowSource) Fill(ctx context.Context, tops []*tensor.Blob) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, per := s.cfg.BatchSize, 3*s.crop*s.crop
	if len(tops) != 2 || len(tops[0].Data) != n*per || len(tops[1].Data) != n {
		return fmt.Errorf("WindowData layer %q: wants tops data (%d×3×%d×%d) and label (%d)", s.cfg.Name, n, s.crop, s.crop, n)
	}
	nfg := s.numFg()
	for item := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		set := s.file.Bg
		if item >= n-nfg {
			set = s.file.Fg
		}
		win := set[s.rng.IntN(len(set))]
		mirror := s.cfg.Transform.Mirror && s.rng.IntN(2) == 1
		pix, h, w, err := s.image(win.Image)
		if err != nil {
			return err
		}
		if err := s.cropWindow(tops[0].Data[item*per:(item+1)*per], pix, h, w, win, mirror); err != nil {
			return err
		}
		tops[1].Data[item] = float32(win.Label)
	}
	return nil
}

// errWindowOutside reports a window that does not lie in its image.
var errWindowOutside = errors.New("window lies outside its image")

// cropWindow writes window win of the 3×h×w image pix into dst
// (3×crop×crop), as Caffe's WindowDataLayer::load_batch does: zeros where
// no image reaches, the (expanded, clipped) box resized bilinearly, then
// flipped when mirror is set, mean-subtracted and scaled. Caffe computes
// the expansion in float32; so does this.
func (s *WindowSource) cropWindow(dst []float32, pix []uint8, h, w int, win Window, mirror bool) error {
	crop := s.crop
	clear(dst)
	x1, y1, x2, y2 := win.X1, win.Y1, win.X2, win.Y2
	outW, outH := crop, crop
	padW, padH := 0, 0
	round := func(v float32) int { return int(math.Round(float64(v))) }
	if s.cfg.ContextPad > 0 || s.cfg.Square {
		contextScale := float32(crop) / float32(crop-2*s.cfg.ContextPad)
		halfH := float32(y2-y1+1) / 2
		halfW := float32(x2-x1+1) / 2
		cx := float32(x1) + halfW
		cy := float32(y1) + halfH
		if s.cfg.Square {
			if halfH > halfW {
				halfW = halfH
			} else {
				halfH = halfW
			}
		}
		x1 = round(cx - float32(halfW*contextScale))
		x2 = round(cx + float32(halfW*contextScale))
		y1 = round(cy - float32(halfH*contextScale))
		y2 = round(cy + float32(halfH*contextScale))
		unclippedH, unclippedW := y2-y1+1, x2-x1+1
		padX1, padY1 := max(0, -x1), max(0, -y1)
		padX2, padY2 := max(0, x2-w+1), max(0, y2-h+1)
		x1, x2, y1, y2 = x1+padX1, x2-padX2, y1+padY1, y2-padY2
		if x1 > x2 || y1 > y2 {
			return fmt.Errorf("WindowData layer %q: %s:%d: %w (%dx%d)", s.cfg.Name, s.file.Name, win.Line, errWindowOutside, w, h)
		}
		scaleX := float32(crop) / float32(unclippedW)
		scaleY := float32(crop) / float32(unclippedH)
		outW = round(float32(float32(x2-x1+1) * scaleX))
		outH = round(float32(float32(y2-y1+1) * scaleY))
		padY1 = round(float32(float32(padY1) * scaleY))
		padX1 = round(float32(float32(padX1) * scaleX))
		padX2 = round(float32(float32(padX2) * scaleX))
		padH = padY1
		padW = padX1
		if mirror {
			padW = padX2
		}
		outH = min(outH, crop-padH)
		outW = min(outW, crop-padW)
	} else if x1 < 0 || y1 < 0 || x2 >= w || y2 >= h {
		return fmt.Errorf("WindowData layer %q: %s:%d: %w (%dx%d): (%d,%d)-(%d,%d)", s.cfg.Name, s.file.Name, win.Line, errWindowOutside, w, h, x1, y1, x2, y2)
	}
	if outW < 1 || outH < 1 {
		return nil // nothing of the image reaches the crop
	}
	bw, bh := x2-x1+1, y2-y1+1
	box := make([]uint8, 3*bh*bw)
	for c := range 3 {
		for y := range bh {
			si := (c*h+y1+y)*w + x1
			copy(box[(c*bh+y)*bw:(c*bh+y+1)*bw], pix[si:si+bw])
		}
	}
	if bh != outH || bw != outW {
		box = resizeBilinear(box, 3, bh, bw, outH, outW)
	}
	for c := range 3 {
		for y := range outH {
			row := box[(c*outH+y)*outW : (c*outH+y+1)*outW]
			out := dst[(c*crop+y+padH)*crop+padW:]
			for x := range outW {
				v := row[x]
				if mirror {
					v = row[outW-1-x]
				}
				var m float32
				if s.mean != nil {
					off := (s.mw - crop) / 2
					m = s.mean[(c*s.mh+y+off+padH)*s.mw+x+off+padW]
				} else {
					m = s.means[c]
				}
				out[x] = (float32(v) - m) * s.scale
			}
		}
	}
	return nil
}
