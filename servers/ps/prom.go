package ps

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the Prometheus metrics of what the server knows beside
// its center's counts: the workers connected to it, and how stale the
// weights were that each push was computed from (Staleness), read at
// every scrape.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dsgd_center_connected_workers",
			Help: "Workers joined to the parameter server over a live connection that has not gone silent."},
			func() float64 { return float64(s.Connected()) }),
		stalenessCollector{srv: s, desc: prometheus.NewDesc("dsgd_center_push_staleness",
			"Updates the center applied between a worker's read of it and its push (async: about the worker count less one).", nil, nil)},
	}
}

// stalenessCollector exports Staleness as a Prometheus histogram.
type stalenessCollector struct {
	srv  *Server
	desc *prometheus.Desc
}

func (c stalenessCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c stalenessCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.srv.Staleness()
	buckets := map[float64]uint64{}
	var cum uint64
	for k, n := range st.Hist[:len(st.Hist)-1] {
		cum += uint64(n)
		buckets[float64(k)] = cum
	}
	ch <- prometheus.MustNewConstHistogram(c.desc, uint64(st.Pushes), float64(st.Sum), buckets)
}
