package data

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"dsgd/caffe/caffepb"
)

// jpegSet makes n 3×256×256 JPEG images (smooth gradients and rings, so
// they compress like photographs rather than noise), with labels i mod 10.
func jpegSet(t testing.TB, n int) *Dataset {
	t.Helper()
	d := &Dataset{Name: "jpeg", N: n, C: 3, H: 256, W: 256, Classes: 10}
	for i := range n {
		m := image.NewRGBA(image.Rect(0, 0, 256, 256))
		for y := range 256 {
			for x := range 256 {
				r := math.Hypot(float64(x-128), float64(y-100+i))
				m.Set(x, y, color.RGBA{uint8(x + i), uint8(y), uint8(128 + 100*math.Sin(r/7)), 255})
			}
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 90}); err != nil {
			t.Fatal(err)
		}
		d.Encoded = append(d.Encoded, buf.Bytes())
		d.Labels = append(d.Labels, int32(i%10))
	}
	return d
}

// meanFile writes a 1×3×256×256 .binaryproto whose value at (c, y, x) is
// c + y/256 + x/65536, so a mean taken at the wrong place shows.
func meanFile(t testing.TB) (string, []float32) {
	t.Helper()
	one, c, h, w := int32(1), int32(3), int32(256), int32(256)
	bp := &caffepb.BlobProto{Num: &one, Channels: &c, Height: &h, Width: &w}
	for ch := range 3 {
		for y := range 256 {
			for x := range 256 {
				bp.Data = append(bp.Data, float32(ch)+float32(y)/256+float32(x)/65536)
			}
		}
	}
	b, err := proto.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mean.binaryproto")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, bp.Data
}

// TestMeanFileWithCrop: a 256×256 mean with a 227 crop, as AlexNet uses
// imagenet_mean.binaryproto: the mean is taken at each pixel's source
// position, the crop centred in TEST.
func TestMeanFileWithCrop(t *testing.T) {
	ds := jpegSet(t, 2)
	mf, mean := meanFile(t)
	l, err := NewLoader(ds, LoaderConfig{BatchSize: 2, Transform: TransformConfig{MeanFile: mf, CropSize: 227, Scale: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b, err := l.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(b)
	if b.Shape != [4]int{2, 3, 227, 227} {
		t.Fatalf("shape %v", b.Shape)
	}
	off := (256 - 227) / 2
	for i := range 2 {
		pix, _, _, _, err := DecodeImage(ds.Encoded[i], 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][3]int{{0, 0, 0}, {2, 226, 226}, {1, 100, 7}} {
			c, y, x := p[0], p[1], p[2]
			src := (c*256+y+off)*256 + x + off
			want := (float32(pix[src]) - mean[src]) * 0.5
			if got := b.Data[((i*3+c)*227+y)*227+x]; got != want {
				t.Fatalf("image %d (%d,%d,%d) = %v, want %v", i, c, y, x, got, want)
			}
		}
	}
}

// BenchmarkLoaderJPEG is the decode rate of one loader goroutine (one
// core) on 3×256×256 JPEG with a 227 crop, mirror and a mean file, as
// AlexNet's train_val reads ImageNet: b.N images.
func BenchmarkLoaderJPEG(b *testing.B) {
	ds := jpegSet(b, 64)
	mf, _ := meanFile(b)
	benchLoader(b, ds, TransformConfig{MeanFile: mf, CropSize: 227, Mirror: true}, 32, 1)
}

// BenchmarkLoaderJPEG2 is BenchmarkLoaderJPEG with two decoding
// goroutines.
func BenchmarkLoaderJPEG2(b *testing.B) {
	ds := jpegSet(b, 64)
	mf, _ := meanFile(b)
	benchLoader(b, ds, TransformConfig{MeanFile: mf, CropSize: 227, Mirror: true}, 32, 2)
}

// BenchmarkLoaderRaw is the same for LeNet's raw 1×28×28 bytes with
// scale 1/256.
func BenchmarkLoaderRaw(b *testing.B) {
	ds, err := Synthetic(SyntheticConfig{N: 6400, C: 1, H: 28, W: 28})
	if err != nil {
		b.Fatal(err)
	}
	benchLoader(b, ds, TransformConfig{Scale: 1.0 / 256}, 64, 1)
}

func benchLoader(b *testing.B, ds *Dataset, tc TransformConfig, batch, threads int) {
	l, err := NewLoader(ds, LoaderConfig{BatchSize: batch, Train: true, Shuffle: true, Seed: 1, Transform: tc, Prefetch: 2, DecodeThreads: threads})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		bt, err := l.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		l.Release(bt)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// TestDecodeThreadsSameBatches: the batches do not depend on how many
// goroutines decode them.
func TestDecodeThreadsSameBatches(t *testing.T) {
	ds := jpegSet(t, 12)
	var first [][]float32
	for _, threads := range []int{1, 3} {
		l, err := NewLoader(ds, LoaderConfig{BatchSize: 5, Train: true, Shuffle: true, Seed: 4, DecodeThreads: threads,
			Transform: TransformConfig{CropSize: 200, Mirror: true, Scale: 0.5}})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 4 {
			b, err := l.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if threads == 1 {
				first = append(first, slices.Clone(b.Data))
			} else if !slices.Equal(first[k], b.Data) {
				t.Fatalf("batch %d differs between 1 and %d decoding goroutines", k, threads)
			}
			l.Release(b)
		}
		l.Close()
	}
}
