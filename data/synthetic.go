package data

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// SyntheticConfig describes a synthetic data set: each class is a fixed
// random pattern of coarse blocks, and each image is its class's pattern
// plus uniform per-pixel noise, so a net can learn it quickly.
type SyntheticConfig struct {
	// N is the number of images; 0 means 1000.
	N int
	// C, H and W are each image's channels, rows and columns; 0 means 1,
	// 28 and 28.
	C, H, W int
	// Classes is the number of classes, 1..65536; 0 means 10. Image i has
	// label i mod Classes.
	Classes int
	// Seed picks the class patterns and the noise.
	Seed uint64
	// Noise is the half-width of the uniform noise added to each pixel;
	// 0 means 40, a negative value means none.
	Noise int
	// Split picks the sample: Train and Test share the class patterns but
	// draw different noise.
	Split Split
}

// Limits on a synthetic data set, so a typo cannot exhaust memory.
const (
	syntheticMaxBytes = 1 << 31
	syntheticMaxNoise = 255
)

// withDefaults fills zero fields and rejects impossible values.
func (c SyntheticConfig) withDefaults() (SyntheticConfig, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.N, 1000)
	def(&c.C, 1)
	def(&c.H, 28)
	def(&c.W, 28)
	def(&c.Classes, 10)
	def(&c.Noise, 40)
	if c.Noise < 0 {
		c.Noise = 0
	}
	switch {
	case c.N < 0 || c.C < 0 || c.H < 0 || c.W < 0:
		return c, fmt.Errorf("synthetic data: negative size N=%d C=%d H=%d W=%d", c.N, c.C, c.H, c.W)
	case c.Classes < 1 || c.Classes > 1<<16:
		return c, fmt.Errorf("synthetic data: classes=%d, want 1..65536", c.Classes)
	case c.Noise > syntheticMaxNoise:
		return c, fmt.Errorf("synthetic data: noise=%d, want at most %d", c.Noise, syntheticMaxNoise)
	case c.Split != Train && c.Split != Test:
		return c, fmt.Errorf("synthetic data: bad split %v", c.Split)
	}
	if size, ok := mulInts(c.N, c.C, c.H, c.W); !ok || size > syntheticMaxBytes {
		return c, fmt.Errorf("synthetic data: N=%d C=%d H=%d W=%d is more than %d bytes", c.N, c.C, c.H, c.W, syntheticMaxBytes)
	}
	return c, nil
}

// Synthetic builds a deterministic synthetic data set: the same config
// gives the same bytes on every run.
func Synthetic(cfg SyntheticConfig) (*Dataset, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	gh, gw := min(cfg.H, 4), min(cfg.W, 4)
	cell := cfg.C * gh * gw
	protos := syntheticPatterns(cfg.Seed, cfg.Classes, cell)

	d := &Dataset{
		Name:    "synthetic/" + cfg.Split.String(),
		N:       cfg.N,
		C:       cfg.C,
		H:       cfg.H,
		W:       cfg.W,
		Classes: cfg.Classes,
		Pixels:  make([]uint8, cfg.N*cfg.C*cfg.H*cfg.W),
		Labels:  make([]int32, cfg.N),
	}
	rng := rand.New(rand.NewPCG(mix(cfg.Seed, tagSample), uint64(cfg.Split)+1))
	// Map each pixel to its pattern cell once.
	cellOf := make([]int, cfg.H*cfg.W)
	for y := range cfg.H {
		for x := range cfg.W {
			cellOf[y*cfg.W+x] = (y*gh/cfg.H)*gw + x*gw/cfg.W
		}
	}
	plane := cfg.H * cfg.W
	span := 2*cfg.Noise + 1
	for i := range cfg.N {
		label := i % cfg.Classes
		d.Labels[i] = int32(label)
		proto := protos[label*cell : (label+1)*cell]
		img := d.Image(i)
		for c := range cfg.C {
			pc := proto[c*gh*gw : (c+1)*gh*gw]
			for p, k := range cellOf {
				v := int(pc[k]) + rng.IntN(span) - cfg.Noise
				img[c*plane+p] = uint8(min(max(v, 0), 255))
			}
		}
	}
	return d, nil
}

// syntheticPatterns draws one pattern of cell bytes per class, no two alike.
func syntheticPatterns(seed uint64, classes, cell int) []uint8 {
	rng := rand.New(rand.NewPCG(mix(seed, tagProto), 0))
	protos := make([]uint8, classes*cell)
	for k := 0; k < classes; {
		p := protos[k*cell : (k+1)*cell]
		for j := range p {
			p[j] = uint8(rng.IntN(256))
		}
		dup := false
		for j := range k {
			if string(protos[j*cell:(j+1)*cell]) == string(p) {
				dup = true
				break
			}
		}
		if !dup {
			k++
		}
	}
	return protos
}

// ParseSynthetic parses a synthetic spec: "synthetic", or "synthetic:"
// followed by comma-separated key=value pairs with keys N, C, H, W,
// classes, seed and noise (any case), as in
// "synthetic:N=1000,C=1,H=28,W=28,classes=10,seed=1". Keys left out keep
// their SyntheticConfig defaults.
func ParseSynthetic(spec string) (SyntheticConfig, error) {
	var cfg SyntheticConfig
	rest, ok := strings.CutPrefix(spec, "synthetic")
	if !ok || (rest != "" && rest[0] != ':') {
		return cfg, fmt.Errorf("synthetic spec %q: want synthetic or synthetic:KEY=VALUE[,KEY=VALUE]", spec)
	}
	if rest == "" {
		return cfg, nil
	}
	rest = rest[1:]
	if rest == "" {
		return cfg, fmt.Errorf("synthetic spec %q: nothing after the colon; want KEY=VALUE pairs such as N=1000,classes=10", spec)
	}
	seen := map[string]bool{}
	for i, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return cfg, fmt.Errorf("synthetic spec %q: item %d %q is not KEY=VALUE", spec, i+1, kv)
		}
		key := strings.ToLower(k)
		if seen[key] {
			return cfg, fmt.Errorf("synthetic spec %q: %s given twice", spec, k)
		}
		seen[key] = true
		if key == "seed" {
			s, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return cfg, fmt.Errorf("synthetic spec %q: seed=%q is not an unsigned integer", spec, v)
			}
			cfg.Seed = s
			continue
		}
		var dst *int
		switch key {
		case "n":
			dst = &cfg.N
		case "c":
			dst = &cfg.C
		case "h":
			dst = &cfg.H
		case "w":
			dst = &cfg.W
		case "classes":
			dst = &cfg.Classes
		case "noise":
			dst = &cfg.Noise
		default:
			return cfg, fmt.Errorf("synthetic spec %q: unknown key %q (want N, C, H, W, classes, seed, noise)", spec, k)
		}
		n, err := strconv.Atoi(v)
		if err != nil || (n < 1 && key != "noise") {
			return cfg, fmt.Errorf("synthetic spec %q: %s=%q: want a positive integer", spec, k, v)
		}
		if key == "noise" && n == 0 {
			n = -1 // noise=0 asks for none; a zero field would mean the default
		}
		*dst = n
	}
	_, err := cfg.withDefaults()
	if err != nil {
		return cfg, fmt.Errorf("synthetic spec %q: %v", spec, strings.TrimPrefix(err.Error(), "synthetic data: "))
	}
	return cfg, nil
}
