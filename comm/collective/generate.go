package collective

import (
	"fmt"
	"math/bits"
)

// MaxSize is the largest group the generators accept; it keeps every
// round number below 1<<20, the room the tag layout gives it.
const MaxSize = 1 << 16

func checkGroup(rank, size, n int) {
	if size < 1 || size > MaxSize {
		panic(fmt.Sprintf("collective: group size %d outside [1,%d]", size, MaxSize))
	}
	if rank < 0 || rank >= size {
		panic(fmt.Sprintf("collective: rank %d outside [0,%d)", rank, size))
	}
	if n < 0 {
		panic(fmt.Sprintf("collective: buffer length %d", n))
	}
}

func checkRoot(root, size int) {
	if root < 0 || root >= size {
		panic(fmt.Sprintf("collective: root %d outside [0,%d)", root, size))
	}
}

// Chunk returns the range [lo,hi) of chunk i when n floats are cut into
// size nearly equal chunks: the first n%size chunks have one float more.
// With n < size the last chunks are empty. Rank r owns chunk r in
// ReduceScatter and contributes it in Allgather.
func Chunk(i, size, n int) (lo, hi int) {
	q, rem := n/size, n%size
	lo = i*q + min(i, rem)
	hi = lo + q
	if i < rem {
		hi++
	}
	return lo, hi
}

// ceilLog2 returns the number of binomial-tree rounds for size ranks.
func ceilLog2(size int) int {
	if size <= 1 {
		return 0
	}
	return bits.Len(uint(size - 1))
}

func send(round, peer, lo, hi int) Step {
	return Step{Round: round, Send: Transfer{peer, lo, hi}, Recv: none}
}

func recv(round, peer, lo, hi int, op Op) Step {
	return Step{Round: round, Send: none, Recv: Transfer{peer, lo, hi}, Op: op}
}

// TreeReduce is the binomial-tree reduction of FireCaffe §6.2: after it,
// root's buffer holds the sum of every rank's buffer. Ranks are numbered
// relative to root; in round k, each rank whose relative number has lowest
// set bit 2^k sends its partial sum to the rank 2^k below it, and that rank
// adds it. It takes ceil(log2 size) rounds; root receives once per round.
// The other ranks' buffers are left holding partial sums.
func TreeReduce(rank, size, root, n int) Schedule {
	checkGroup(rank, size, n)
	checkRoot(root, size)
	s := Schedule{Rank: rank, Size: size, N: n, Segment: DefaultSegment}
	if n == 0 {
		return s
	}
	s.Steps = appendTreeReduce(s.Steps, rank, size, root, n, 0)
	return s
}

func appendTreeReduce(steps []Step, rank, size, root, n, round0 int) []Step {
	vr := (rank - root + size) % size
	for k := 0; 1<<k < size; k++ {
		m := 1 << k
		if vr&m != 0 {
			return append(steps, send(round0+k, (vr-m+root)%size, 0, n))
		}
		if vr+m < size {
			steps = append(steps, recv(round0+k, (vr+m+root)%size, 0, n, Add))
		}
	}
	return steps
}

// TreeBroadcast is the binomial-tree broadcast from root, the reduction
// tree run backwards: after it every rank's buffer equals root's. It takes
// ceil(log2 size) rounds.
func TreeBroadcast(rank, size, root, n int) Schedule {
	checkGroup(rank, size, n)
	checkRoot(root, size)
	s := Schedule{Rank: rank, Size: size, N: n, Segment: DefaultSegment}
	if n == 0 {
		return s
	}
	s.Steps = appendTreeBroadcast(s.Steps, rank, size, root, n, 0)
	return s
}

func appendTreeBroadcast(steps []Step, rank, size, root, n, round0 int) []Step {
	vr := (rank - root + size) % size
	last := ceilLog2(size) - 1 // the message over distance 2^k goes in round last-k
	k := last
	if vr != 0 {
		k = bits.TrailingZeros(uint(vr))
		steps = append(steps, recv(round0+last-k, (vr-(1<<k)+root)%size, 0, n, Copy))
		k--
	}
	for ; k >= 0; k-- {
		if vr+(1<<k) < size {
			steps = append(steps, send(round0+last-k, (vr+(1<<k)+root)%size, 0, n))
		}
	}
	return steps
}

// TreeAllreduce is TreeReduce to rank 0 followed by TreeBroadcast from it:
// 2·ceil(log2 size) rounds, the sum computed once and copied, so every rank
// ends with the same bits.
func TreeAllreduce(rank, size, n int) Schedule {
	checkGroup(rank, size, n)
	s := Schedule{Rank: rank, Size: size, N: n, Segment: DefaultSegment}
	if n == 0 {
		return s
	}
	s.Steps = appendTreeReduce(s.Steps, rank, size, 0, n, 0)
	s.Steps = appendTreeBroadcast(s.Steps, rank, size, 0, n, ceilLog2(size))
	return s
}

// RingReduceScatter is the ring reduce-scatter: the buffer is cut into size
// chunks (see Chunk), and in each of size-1 rounds every rank sends one
// partial chunk to rank+1 and adds the one it receives from rank-1. After
// it, rank r's chunk r holds the sum over all ranks (the rest of its buffer
// holds partial sums). Each rank sends n - len(chunk r) floats.
func RingReduceScatter(rank, size, n int) Schedule {
	checkGroup(rank, size, n)
	s := Schedule{Rank: rank, Size: size, N: n, Segment: DefaultSegment}
	s.Steps = appendRing(s.Steps, rank, size, n, 0, Add)
	return s
}

// RingAllgather is the ring allgather: rank r starts owning chunk r (see
// Chunk) and in each of size-1 rounds passes the chunk it got last to
// rank+1. After it every rank holds every rank's chunk. Each rank sends
// n - len(chunk r+1) floats.
func RingAllgather(rank, size, n int) Schedule {
	checkGroup(rank, size, n)
	s := Schedule{Rank: rank, Size: size, N: n, Segment: DefaultSegment}
	s.Steps = appendRing(s.Steps, rank, size, n, 0, Copy)
	return s
}

// RingAllreduce is RingReduceScatter then RingAllgather: 2(size-1) rounds,
// each rank sending about 2(size-1)/size·n floats whatever size is, which
// is bandwidth-optimal. Each chunk is summed once, on its owner, and then
// copied, so every rank ends with the same bits.
func RingAllreduce(rank, size, n int) Schedule {
	checkGroup(rank, size, n)
	s := Schedule{Rank: rank, Size: size, N: n, Segment: DefaultSegment}
	s.Steps = appendRing(s.Steps, rank, size, n, 0, Add)
	s.Steps = appendRing(s.Steps, rank, size, n, size-1, Copy)
	return s
}

// appendRing appends size-1 ring rounds. With Add (reduce-scatter), round
// s sends chunk rank-s-1 and receives chunk rank-s-2, so the last chunk
// received, and completed, is chunk rank. With Copy (allgather), round s
// sends chunk rank-s and receives chunk rank-s-1. Empty chunks (n < size)
// are not sent.
func appendRing(steps []Step, rank, size, n, round0 int, op Op) []Step {
	next, prev := (rank+1)%size, (rank-1+size)%size
	shift := 0
	if op == Add {
		shift = 1
	}
	for s := 0; s < size-1; s++ {
		sc := ((rank-s-shift)%size + size) % size
		rc := ((rank-s-shift-1)%size + size) % size
		st := Step{Round: round0 + s, Send: none, Recv: none, Op: op}
		if lo, hi := Chunk(sc, size, n); hi > lo {
			st.Send = Transfer{next, lo, hi}
		}
		if lo, hi := Chunk(rc, size, n); hi > lo {
			st.Recv = Transfer{prev, lo, hi}
		}
		if st.Send.Active() || st.Recv.Active() {
			steps = append(steps, st)
		}
	}
	return steps
}

// RecursiveDoublingAllreduce is the recursive-doubling (butterfly)
// allreduce for small messages. With q the largest power of two ≤ size and
// e = size-q extra ranks: first rank q+i folds its buffer into rank i
// (i < e); then ranks 0..q-1 exchange whole buffers with rank^2^k for
// k = 0..log2(q)-1 and add; last, rank i sends the result back to rank q+i.
// log2(q) rounds, plus 2 when size is not a power of two. Partners add the
// same two values in opposite orders, and float addition is commutative,
// so every rank ends with the same bits (NaN payloads aside).
func RecursiveDoublingAllreduce(rank, size, n int) Schedule {
	checkGroup(rank, size, n)
	s := Schedule{Rank: rank, Size: size, N: n, Segment: DefaultSegment}
	if n == 0 || size == 1 {
		return s
	}
	q := 1 << (bits.Len(uint(size)) - 1)
	e := size - q
	round := 0
	if e > 0 {
		switch {
		case rank >= q:
			s.Steps = append(s.Steps,
				send(0, rank-q, 0, n),
				recv(bits.Len(uint(q)), rank-q, 0, n, Copy))
			return s
		case rank < e:
			s.Steps = append(s.Steps, recv(0, rank+q, 0, n, Add))
		}
		round = 1
	}
	for m := 1; m < q; m <<= 1 {
		s.Steps = append(s.Steps, Step{Round: round, Send: Transfer{rank ^ m, 0, n}, Recv: Transfer{rank ^ m, 0, n}, Op: Add})
		round++
	}
	if e > 0 && rank < e {
		s.Steps = append(s.Steps, send(round, rank+q, 0, n))
	}
	return s
}

// DisseminationBarrier is the dissemination barrier: in round k every rank sends an
// empty message to rank+2^k and receives one from rank-2^k, for
// ceil(log2 size) rounds, after which every rank has heard, indirectly,
// from every other.
func DisseminationBarrier(rank, size int) Schedule {
	checkGroup(rank, size, 0)
	s := Schedule{Rank: rank, Size: size, Segment: DefaultSegment}
	for k := 0; 1<<k < size; k++ {
		m := 1 << k
		s.Steps = append(s.Steps, Step{
			Round: k,
			Send:  Transfer{Peer: (rank + m) % size},
			Recv:  Transfer{Peer: (rank - m%size + size) % size},
			Op:    Copy,
		})
	}
	return s
}

// AllreduceSchedule returns rank's schedule for an allreduce of n floats
// with alg, resolving Auto.
func AllreduceSchedule(alg Algorithm, rank, size, n int) Schedule {
	switch alg.Resolve(size, n) {
	case Tree:
		return TreeAllreduce(rank, size, n)
	case Ring:
		return RingAllreduce(rank, size, n)
	case RecursiveDoubling:
		return RecursiveDoublingAllreduce(rank, size, n)
	}
	panic(fmt.Sprintf("collective: unknown algorithm %d", alg))
}
