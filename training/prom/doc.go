// Package prom exports a run's progress as Prometheus metrics: the
// training gauges and counters one process reports (iteration, loss,
// learning rate, test outputs, phase times), its endpoint's traffic, an
// asynchronous scheme's center counters and the build it runs, each in a
// registry of its own. Serving the registry over HTTP is the caller's.
package prom
