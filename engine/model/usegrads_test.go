package model

import (
	"math"
	"testing"
)

// TestUseGrads: after UseGrads the backward pass writes the same
// gradients, bitwise, into the new buffer and nothing into the old one,
// for nets with convolutions, BatchNorm and shared params; a net built
// ShareWith it (without OwnGrads) follows.
func TestUseGrads(t *testing.T) {
	for _, tn := range []testNet{lenetNet(), bnNet(), sharedNet(), mlpNet()} {
		t.Run(tn.name, func(t *testing.T) {
			ref := tn.build(t, Options{Seed: 1}, 3)
			ref.Forward()
			ref.Backward()
			want := append([]float32(nil), ref.Grads()...)

			n := tn.build(t, Options{Seed: 1}, 3)
			user, err := Build(tn.spec, tn.inputs, Options{Seed: 1, ShareWith: n})
			if err != nil {
				t.Fatal(err)
			}
			own, err := Build(tn.spec, tn.inputs, Options{Seed: 1, ShareWith: n, OwnGrads: true})
			if err != nil {
				t.Fatal(err)
			}
			old := n.Grads()
			buf := make([]float32, len(old))
			if err := n.UseGrads(buf[:len(buf)-1]); err == nil && len(buf) > 0 {
				t.Fatal("a buffer one float short accepted")
			}
			if err := n.UseGrads(buf); err != nil {
				t.Fatal(err)
			}
			for i := range old {
				old[i] = float32(math.NaN())
			}
			n.Forward()
			n.Backward()
			for i := range want {
				if math.Float32bits(buf[i]) != math.Float32bits(want[i]) {
					t.Fatalf("gradient %d = %v in the new buffer, %v before", i, buf[i], want[i])
				}
				if !math.IsNaN(float64(old[i])) {
					t.Fatalf("gradient %d written to the old buffer", i)
				}
			}
			if len(buf) > 0 && &n.Grads()[0] != &buf[0] || len(buf) > 0 && &user.Grads()[0] != &buf[0] {
				t.Error("Grads of the net, or of the net sharing them, is not the new buffer")
			}
			if len(buf) > 0 && &own.Grads()[0] == &buf[0] {
				t.Error("a net with OwnGrads was moved too")
			}
		})
	}
}
