package sim

// cpu shares a machine's processors among the computes running at once
// (Config.Cores): each of k running computes progresses at
// min(1, cores/k) of its full speed, the processor-sharing model of an
// operating system's fair scheduler, so that workers computing alone run
// as fast as one, and workers oversubscribing the cores all slow down.
type cpu struct {
	s     *sim
	cores float64
	jobs  []*cpuJob
	last  float64 // when the jobs' progress was last brought up to date
	wake  uint64  // the scheduled wake-up's token; older ones are stale
}

// cpuJob is one compute: segments of work (seconds at full speed), each
// with what to do when it finishes (at time t).
type cpuJob struct {
	segs []cpuSeg
	left float64 // the current segment's work still to do
	done bool
}

type cpuSeg struct {
	work float64
	fin  func(t float64)
}

// rate is each running job's speed now.
func (c *cpu) rate() float64 {
	if len(c.jobs) == 0 {
		return 1
	}
	return min(1, c.cores/float64(len(c.jobs)))
}

// advance brings every job's progress up to time now.
func (c *cpu) advance(now float64) {
	if d := now - c.last; d > 0 {
		r := c.rate()
		for _, j := range c.jobs {
			j.left -= d * r
		}
	}
	c.last = now
}

// start adds a job at time now.
func (c *cpu) start(j *cpuJob, now float64) {
	c.advance(now)
	if len(j.segs) == 0 {
		return
	}
	j.left = j.segs[0].work
	c.jobs = append(c.jobs, j)
	c.settle(now)
}

// stop removes a job (an aborted compute) at time now.
func (c *cpu) stop(j *cpuJob, now float64) {
	c.advance(now)
	for i, x := range c.jobs {
		if x == j {
			c.jobs = append(c.jobs[:i], c.jobs[i+1:]...)
			break
		}
	}
	j.done = true
	c.settle(now)
}

// settle finishes the segments whose work is done at time now, then
// schedules a wake-up for the next one to finish.
func (c *cpu) settle(now float64) {
	const eps = 1e-12
	for {
		var next *cpuJob
		for _, j := range c.jobs {
			if j.left <= eps {
				next = j
				break
			}
		}
		if next == nil {
			break
		}
		seg := next.segs[0]
		next.segs = next.segs[1:]
		if len(next.segs) == 0 {
			for i, x := range c.jobs {
				if x == next {
					c.jobs = append(c.jobs[:i], c.jobs[i+1:]...)
					break
				}
			}
			next.done = true
		} else {
			next.left += next.segs[0].work // carry the rounding over
		}
		seg.fin(now)
	}
	if len(c.jobs) == 0 {
		return
	}
	r := c.rate()
	soonest := c.jobs[0].left
	for _, j := range c.jobs[1:] {
		soonest = min(soonest, j.left)
	}
	c.wake++
	token := c.wake
	c.s.eng.at(now+max(soonest, 0)/r, func() {
		if token != c.wake {
			return // the running set changed since: a later wake-up holds
		}
		now := c.s.eng.now
		c.advance(now)
		c.settle(now)
	})
}
