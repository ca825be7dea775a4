package report

import (
	"time"

	"dsgd/simulator/study"
)

// PlotSweep writes a simulated sweep's plots (dsgd simulate --plot), one
// line per scheme of names against the worker count P: the iteration
// time to prefix-time.png and .svg, the weak-scaling efficiency T1/T(P)
// to prefix-efficiency.png and .svg.
func PlotSweep(prefix string, names []string, res *study.Result) error {
	var times, effs []Series
	for _, name := range names {
		st, se := Series{Name: name}, Series{Name: name}
		for _, r := range res.Runs {
			if r.Scheme != name {
				continue
			}
			st.X, st.Y = append(st.X, float64(r.Workers)), append(st.Y, float64(r.Result.Iter)/float64(time.Millisecond))
			se.X, se.Y = append(se.X, float64(r.Workers)), append(se.Y, r.Efficiency)
		}
		times, effs = append(times, st), append(effs, se)
	}
	where := res.Model.Name + ", " + res.Network.Name
	if err := PlotXY(times, "simulated iteration time, "+where, "workers P", "iteration time (ms)", true, true, prefix+"-time.png", prefix+"-time.svg"); err != nil {
		return err
	}
	return PlotXY(effs, "weak-scaling efficiency T1/T(P), "+where, "workers P", "efficiency", true, false, prefix+"-efficiency.png", prefix+"-efficiency.svg")
}
