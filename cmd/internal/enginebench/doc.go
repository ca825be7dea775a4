// Package enginebench is `dsgd bench`'s machinery: it times the zoo nets
// (Nets: the batch, synthetic data and iteration counts of each) with
// dsgd's engine and with the PyTorch peer scripts, same batch, same
// thread counts, interleaved in one invocation, and prints per net and
// thread count the medians over repetitions, their ratio and dsgd's FLOP
// rate against the FMA peak measured here (Run). The FLOPs of an
// iteration are counted from the Convolution and InnerProduct layers'
// shapes (iterFlops).
//
// RunISAs runs the command once per ISA cap (oneDNN's
// ONEDNN_MAX_CPU_ISA, with the matching OPENBLAS_CORETYPE) as a child of
// this executable, which writes its rows as JSON to Config.RowsTo, and
// prints every child's rows in one table with an ISA column. RunGPU times
// forward+backward on a GPU against the peers with --device cuda, beside a
// cuBLAS SGEMM ceiling.
//
// The command (cmd/dsgd/bench.go) parses the flags into a Config and
// checks the GPU; this package parses the flags' values into Config's
// fields (ParseNets, ParseThreads, ParseISAs, ParsePerNet and SetCounts),
// its errors naming the values, which the command prefixes with the flag. OnGPU, TimeGPU,
// PrintGPUNet, Summarize and Median are shared with `dsgd time --gpu`;
// PrintTimes and PrintReorders write `dsgd time`'s tables on the CPU,
// TimeOnGPU its table on a GPU.
package enginebench
