// Package cpuinfo describes the processor dsgd runs on: its model name,
// the vector instruction sets it and the operating system support, and
// its measured float32 FMA peak, the ceiling every kernel's achieved rate
// is reported against.
//
// The peak is measured, not looked up: an assembly loop of independent
// fused multiply-adds on the widest vector registers the CPU has (AVX-512
// ZMM at the AVX512_CORE levels, else AVX2 YMM with FMA3; at AVX and
// SSE4.1, which have no FMA, a multiply and an add on YMM or XMM), timed
// on one thread and on several at once. The level is the CPU's, capped by
// ONEDNN_MAX_CPU_ISA where that is set (see ISA and EnvCap), so that a
// run under a cap reports the peak at that cap. Clock speeds under vector load differ from the
// nominal ones (AVX-512 licences, turbo with one core or all), so a
// figure from a data sheet would be wrong by a varying factor. The
// assembly needs amd64 and is left out under the purego build tag, where
// MeasurePeak returns an error saying so.
package cpuinfo
