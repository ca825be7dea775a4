// Package timeline owns the Chrome trace writer behind `dsgd train
// --timeline`: a stream of JSON trace events (the format chrome://tracing
// and Perfetto read) with one track per rank, holding its forward and
// backward passes per layer, its communication and center operations,
// its updates and the time it spent waiting — the equivalent of
// Horovod's timeline.
//
// A Writer streams: each span is encoded and written (through a buffer)
// as it is reported, so a run of millions of spans costs no memory. It is
// safe for concurrent use, so every rank's goroutines can report into
// one Writer. Times are offsets from the Writer's start instant.
//
//	tl := timeline.New(f, time.Now())
//	tl.Process(0, "dsgd train")
//	tl.Track(0, 3, "worker 3")
//	tl.Span(0, 3, "conv1", "forward", t0, time.Since(t0), nil)
//	err := tl.Close() // writes the closing brackets and flushes
//
// The simulator reports virtual time (durations since its time zero)
// instead: SpanAt takes such an offset, and Virtual adapts a Writer to a
// callback of plain values that a simulator's trace hook can call.
package timeline
