package collective_test

import (
	"context"
	"fmt"
	"sync"

	"dsgd/comm/collective"
	"dsgd/comm/transport"
)

// Four in-process ranks sum their gradients; every rank ends with the same
// sum.
func ExampleExecutor_Allreduce() {
	const p = 4
	eps := transport.NewInproc(p)
	grads := make([][]float32, p)
	var wg sync.WaitGroup
	for r := range p {
		grads[r] = []float32{float32(r), 1, 10 * float32(r)}
		wg.Go(func() {
			ex := collective.NewExecutor(eps[r])
			defer ex.Close()
			if err := ex.Allreduce(context.Background(), grads[r], collective.Auto); err != nil {
				eps[r].Close()
				fmt.Println(err)
			}
		})
	}
	wg.Wait()
	fmt.Println(grads[0], grads[3])
	// Output: [6 4 60] [6 4 60]
}

// What each allreduce costs the busiest rank for 1 Mi floats over 8 ranks:
// the numbers behind FireCaffe's tree ∝ log p and the ring's 2(p-1)/p.
func ExampleSchedule_Cost() {
	const p, n = 8, 1 << 20
	for _, alg := range []collective.Algorithm{collective.Tree, collective.Ring, collective.RecursiveDoubling} {
		var worst collective.Cost
		for r := range p {
			if c := collective.AllreduceSchedule(alg, r, p, n).Cost(); c.BytesSent+c.BytesRecv > worst.BytesSent+worst.BytesRecv {
				worst = c
			}
		}
		fmt.Printf("%-4v rounds %2d  sent %5.2f·n  received %5.2f·n  reduced %4.2f·n floats\n",
			alg, worst.Rounds, float64(worst.BytesSent)/(4*n), float64(worst.BytesRecv)/(4*n), float64(worst.FloatsReduced)/n)
	}
	// Output:
	// tree rounds  6  sent  3.00·n  received  3.00·n  reduced 3.00·n floats
	// ring rounds 14  sent  1.75·n  received  1.75·n  reduced 0.88·n floats
	// rd   rounds  3  sent  3.00·n  received  3.00·n  reduced 3.00·n floats
}
