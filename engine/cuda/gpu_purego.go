//go:build purego

package cuda

import "errors"

// GPU is a device opened for computing; a purego build has none.
type GPU struct{ Device }

// Buffer is float32 memory on a GPU; a purego build has none.
type Buffer struct{}

// Open says that a purego build opens no GPU.
func Open(index int, tf32 bool) (*GPU, error) {
	_, err := Probe()
	return nil, errors.Join(err, errors.New("no GPU in a purego build"))
}

// Close does nothing.
func (g *GPU) Close() error { return nil }

// Alloc fails.
func (g *GPU) Alloc(n int) (*Buffer, error) { return nil, errors.New("no GPU in a purego build") }

// Len is 0.
func (b *Buffer) Len() int { return 0 }

// Free does nothing.
func (b *Buffer) Free() error { return nil }

// Upload fails.
func (b *Buffer) Upload(src []float32) error { return errors.New("no GPU in a purego build") }

// Download fails.
func (b *Buffer) Download(dst []float32) error { return errors.New("no GPU in a purego build") }

// Sgemm fails.
func (g *GPU) Sgemm(m, n, k int, alpha float32, a, b *Buffer, beta float32, c *Buffer) error {
	return errors.New("no GPU in a purego build")
}

// Sync does nothing.
func (g *GPU) Sync() error { return nil }
