// Package study is what dsgd simulate runs: it builds what is simulated
// from a Config (a uniform model, or a Caffe job's train net measured
// here with the real engine; a network preset, spec or the tcp transport
// measured on loopback), runs the schemes in virtual time (package sim)
// for every worker count of a sweep, and computes the figures: T1, one
// worker's iteration under seq, and each run's weak-scaling speedup
// P*T1/T(P) and efficiency T1/T(P) (Sweep). Validate trains schemes for
// real through a Trainer the caller passes in, measures the model in
// lockstep and the inproc transport, simulates the same and compares.
//
// Progress goes to a Reporter as it happens; Text is the one dsgd
// simulate prints (its lines before and after a study too). The package
// parses no flags. Its errors name Config's fields; a *ConfigError is
// a Config refused. ParseWorkers reads a sweep's worker counts
// ("1,2,...,4096").
//
// Where it sits: above simulator/sim and simulator/calib, it is the one
// simulator package that reads a Caffe job (training/job) and writes a
// trace (training/timeline).
package study
