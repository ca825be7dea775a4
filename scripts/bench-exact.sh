#!/bin/bash
# The cost of exact gradient sums (--reduce exact, issue 27) against float32
# sums (--reduce fast), per training iteration (the run's phase total, ms),
# on LeNet (batch 64: 8 atoms of 8) and CaffeNet (batch 32: 8 atoms of 4),
# seq and sync-ring with 2 workers in one process, interleaved and repeated;
# beside it PyTorch's LeNet step at batch 64 on 2 threads (the peer,
# ../shared/peer/torch_lenet.py), from the same invocation.
# Usage: scripts/bench-exact.sh [REPS]   (run from the repository root,
# after make build; PYTHON defaults to /usr/bin/python3)
set -euo pipefail
reps=${1:-2}
py=${PYTHON:-/usr/bin/python3}
run() { ./dsgd train "$@" --test-interval 0 --snapshot-prefix none --display 0 2>&1 | awk '/^  total/{print $2}'; }
peer() { (cd ../shared/peer && "$py" torch_lenet.py --iters 120 --threads 2 --display 100000 2>&1 | awk '/iter ms/{for(i=1;i<=NF;i++) if($i=="mean"){print $(i+1); exit}}'); }
printf '%-28s %-6s %10s\n' "run" "sums" "ms/iter"
for rep in $(seq "$reps"); do
	for r in fast exact; do
		printf '%-28s %-6s %10s\n' "lenet seq 1x64" $r "$(run --iters 100 --reduce $r)"
		printf '%-28s %-6s %10s\n' "lenet sync-ring 2x32" $r "$(run --iters 100 --reduce $r --scheme sync-ring --workers 2 --batch 32)"
		printf '%-28s %-6s %10s\n' "caffenet seq 1x32" $r "$(run --model caffenet --batch 32 --iters 4 --reduce $r)"
		printf '%-28s %-6s %10s\n' "caffenet sync-ring 2x16" $r "$(run --model caffenet --batch 16 --workers 2 --scheme sync-ring --iters 4 --reduce $r)"
	done
	if "$py" -c 'import torch' 2>/dev/null; then
		printf '%-28s %-6s %10s\n' "pytorch lenet 1x64 (peer)" "-" "$(peer)"
	fi
done
