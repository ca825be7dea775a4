// Package interrupt turns a process's stop signals (SIGINT, SIGTERM,
// SIGHUP) into a cancelled context: the first one asks the run to stop
// after a snapshot, a second one (or the grace period passing) ends the
// process at once with the conventional status 128+N. A SIGTERM delivered
// again within RepeatWindow counts as the first one, and a signal the
// process was started with ignored (nohup's SIGHUP) stays ignored.
// SetEffect gives a signal Caffe's other effects (-sighup_effect,
// -sigint_effect): a snapshot while the run goes on (TakeSnapshotRequest
// reads it), or none.
//
// dsgd's commands run under one Interrupter (cmd/dsgd's mainStatus); the
// tcp launcher reads the signal received (SignalOf) to stop its ranks the
// same way.
package interrupt
