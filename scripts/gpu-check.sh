#!/bin/bash
# The GPU checks of issue 21, in one run on a machine with an NVIDIA GPU
# and no Go toolchain (the device machine).
#
#   scripts/gpu-check.sh build   here: dsgd and the GPU test binaries, the
#                                shared libraries they need that such a
#                                machine may lack (not glibc's, not the C++
#                                runtime's: cuDNN needs the machine's own),
#                                the PyTorch peer and Fashion-MNIST, packed
#                                into .gpu/ (which .gitignore ignores: carry it)
#   scripts/gpu-check.sh run     there: the GPU tests (every GPU layer against
#                                the CPU engine on the published nets, the
#                                finite-difference check, dropout, SGEMM,
#                                extract-features on GPU 0), then
#                                the benchmarks against PyTorch on the same GPU;
#                                a table in $OUT/gpu-check.md (./gpu-check.md
#                                without OUT), logs beside it
#
# GPU_CHECK_PARTS (run) picks parts: tests, train, time, bench (default: all).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
case "${1:-run}" in
build)
	rm -rf .gpu/stage && mkdir -p .gpu/stage/lib .gpu/stage/peer .gpu/stage/bench
	go build -ldflags='-s -w' -o .gpu/stage/dsgd ./cmd/dsgd || exit 1
	go test -c -ldflags='-s -w' -o .gpu/stage/cuda.test ./engine/cuda || exit 1
	go test -c -ldflags='-s -w' -o .gpu/stage/gpunet.test ./engine/gpunet || exit 1
	go test -c -ldflags='-s -w' -o .gpu/stage/dsgdcmd.test ./cmd/dsgd || exit 1
	for b in .gpu/stage/dsgd .gpu/stage/*.test; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
		grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*|libstdc\+\+|libgcc_s)\.so' |
		xargs -r cp -L -t .gpu/stage/lib
	cp /work/shared/peer/torch_nets.py .gpu/stage/peer/ 2>/dev/null || cp ../shared/peer/torch_nets.py .gpu/stage/peer/
	cp bench/resnet18.prototxt .gpu/stage/bench/
	tar -C .gpu/stage -cJf .gpu/bundle.tar.xz . || exit 1
	rm -rf .gpu/stage
	if [ ! -d .gpu/data ]; then
		mkdir -p .gpu/data && cp /usr/share/datasets/fashion-mnist/*.gz .gpu/data/
	fi
	du -sh .gpu/bundle.tar.xz .gpu/data
	echo "on the GPU machine: scripts/gpu-check.sh run (carry .gpu)"
	;;
run)
	out=${OUT:-.}
	parts=${GPU_CHECK_PARTS:-tests train time bench}
	g=/tmp/dsgd-gpu
	rm -rf $g && mkdir -p $g && tar -C $g -xJf .gpu/bundle.tar.xz || exit 1
	export LD_LIBRARY_PATH=$g/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	# The NVIDIA wheels' libraries, where PyTorch's python3 has them.
	libs=$(python3 -c 'import glob, os, nvidia; print(":".join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib")))))' 2>/dev/null)
	export DSGD_CUDA_LIBS=$libs DSGD_REQUIRE_GPU=1
	report=$out/gpu-check.md
	{
		echo "# GPU check, $(date -u +'%Y-%m-%d %H:%M UTC')"
		echo
		echo '```'
		nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi: not found"
		python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1
		lscpu | grep -E '^Model name|^CPU\(s\)'
		echo '```'
	} >"$report"
	if [[ $parts == *tests* ]]; then
		$g/dsgd help >/dev/null 2>&1
		echo "dsgd runs here: exit $?" >>"$report"
		{
			echo '```'
			$g/dsgd device_query -gpu all 2>&1
			echo "device_query -gpu all: exit $?"
			echo '```'
		} >>"$report"
		(cd engine/cuda && timeout 60 $g/cuda.test -test.v 2>&1) >"$out/cuda-test.log"
		echo "cuda.test exit $?" >>"$report"
		(cd engine/gpunet && timeout 240 $g/gpunet.test -test.v 2>&1) >"$out/gpunet-test.log"
		echo "gpunet.test exit $?" >>"$report"
		(cd cmd/dsgd && timeout 60 $g/dsgdcmd.test -test.v -test.run 'TestExtractFeaturesGPU' 2>&1) >"$out/extract-test.log"
		echo "extract-features --gpu test exit $?" >>"$report"
		{
			echo '```'
			grep -E '^(=== RUN|--- |    |ok|FAIL|PASS)' "$out/cuda-test.log" "$out/gpunet-test.log" "$out/extract-test.log" | grep -v '=== RUN' | cut -c1-400 | head -150
			echo '```'
		} >>"$report"
	fi
	if [[ $parts == *bench* ]]; then
		peer="--peer-nets $g/peer/torch_nets.py --python python3"
		timeout 300 $g/dsgd bench --gpu 0 --reps 1 $peer \
			--nets lenet,cifar10_quick,caffenet,googlenet,resnet18 >"$out/bench.log" 2>&1
		echo "bench --gpu 0: exit $?" >>"$report"
		timeout 150 $g/dsgd bench --gpu 0 --gpu-fastest --reps 1 $peer --nets caffenet,googlenet,resnet18 >"$out/bench-fastest.log" 2>&1
		echo "bench --gpu 0 --gpu-fastest: exit $?" >>"$report"
		timeout 120 $g/dsgd bench --gpu 0 --tf32 --gpu-fastest --reps 1 $peer --nets caffenet,resnet18 >"$out/bench-tf32.log" 2>&1
		echo "bench --gpu 0 --tf32 --gpu-fastest: exit $?" >>"$report"
		{
			grep -E '^bench:|^\|' "$out/bench.log"
			echo
			grep -E '^bench:|^\|' "$out/bench-fastest.log"
			echo
			grep -E '^bench:|^\|' "$out/bench-tf32.log"
			echo '```'
			grep -E 'gpu: on the CPU|error|panic' "$out/bench.log" | head -8
			echo '```'
		} >>"$report"
	fi
	if [[ $parts == *train* ]]; then
		# LeNet on Fashion-MNIST with its solver (10,000 iterations), on the
		# GPU; the CPU's accuracy from the same seed is in docs/benchmarks.md
		# (make train). Then two workers sharing the GPU under overlap.
		mkdir -p /tmp/fm && cp .gpu/data/*.gz /tmp/fm/
		(cd /tmp && timeout 300 $g/dsgd train --gpu 0 --data /tmp/fm --snapshot-prefix none 2>&1) >"$out/train-lenet.log"
		echo "train lenet --gpu 0: exit $?" >>"$report"
		(cd /tmp && timeout 200 $g/dsgd train --gpu 0 --data /tmp/fm --snapshot-prefix none --workers 2 --scheme overlap --iters 2000 2>&1) >"$out/train-overlap.log"
		echo "train lenet --gpu 0 --workers 2 --scheme overlap: exit $?" >>"$report"
		{
			echo '```'
			grep -E 'GPU|on the CPU|accuracy|images/s|Optimization|elapsed|error|panic' "$out/train-lenet.log" | tail -12
			grep -E 'GPU|accuracy|images/s|comm|exposed|error|panic' "$out/train-overlap.log" | tail -8
			echo '```'
		} >>"$report"
	fi
	if [[ $parts == *time* ]]; then
		# Where a step's time goes, layer by layer (dsgd time --gpu).
		timeout 90 $g/dsgd time --gpu 0 --model googlenet --batch 128 --iters 10 --warmup 3 \
			--data synthetic:N=128,C=3,H=256,W=256,classes=1000 >"$out/time-googlenet.log" 2>&1
		echo "time googlenet --gpu 0: exit $?" >>"$report"
		timeout 90 $g/dsgd time --gpu 0 --net bench/resnet18.prototxt --batch 64 --iters 10 --warmup 3 \
			--data synthetic:N=64,C=3,H=256,W=256,classes=1000 >"$out/time-resnet18.log" 2>&1
		echo "time resnet18 --gpu 0: exit $?" >>"$report"
	fi
	cat "$report"
	;;
*)
	echo "usage: scripts/gpu-check.sh build|run" >&2
	exit 2
	;;
esac
