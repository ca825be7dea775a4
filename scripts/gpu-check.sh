#!/bin/bash
# The GPU checks of issue 21, in one run on a machine with an NVIDIA GPU
# and no Go toolchain (the device machine): build here with
# `scripts/gpu-check.sh build` (test binaries into .gpu/, which
# .git/info/exclude should ignore; carry it), then run there with
# `scripts/gpu-check.sh run` (results in $OUT/gpu-check.md, or
# ./gpu-check.md without OUT). Today it checks what the GPU engine has:
# the driver, the libraries and cuBLAS SGEMM against a float64 reference,
# and the fp32 SGEMM ceiling the benchmarks will report against.
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-run}" in
build)
	mkdir -p .gpu
	go test -c -o .gpu/cuda.test ./engine/cuda
	echo "built .gpu/cuda.test; on the GPU machine: scripts/gpu-check.sh run (carry .gpu)"
	;;
run)
	out=${OUT:-.}/gpu-check.md
	{
		echo "# GPU check, $(date -u +'%Y-%m-%d %H:%M UTC')"
		echo
		echo '```'
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "nvidia-smi: not found"
		echo '```'
		echo
		echo '```'
		DSGD_REQUIRE_GPU=1 timeout 300 .gpu/cuda.test -test.v -test.run 'Probe|Sgemm' 2>&1
		echo "exit $?"
		echo '```'
	} >"$out" 2>&1
	cat "$out"
	;;
*)
	echo "usage: scripts/gpu-check.sh build|run" >&2
	exit 2
	;;
esac
