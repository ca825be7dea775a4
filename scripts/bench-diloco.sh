#!/bin/bash
# DiLoCo against sync-ring (issue 26): LeNet on Fashion-MNIST, WORKERS
# workers as processes over loopback TCP, the same global batch (64) and
# iterations, so the same images; for each, the final test accuracy and
# the bytes rank 0 sent per iteration (its transport's count, the initial
# weight broadcast included). sync-ring runs --reduce fast (float32
# gradients, as diloco's float32 pseudo-gradients); diloco runs H =
# --interval inner steps per outer step. Beside them, PyTorch's LeNet
# step at batch 64 on 2 threads (../shared/peer/torch_lenet.py) from the
# same invocation, for the machine's speed.
# Usage: scripts/bench-diloco.sh   (from the repository root, after make
# build; ITERS, WORKERS, H and PYTHON override the defaults)
set -euo pipefail
iters=${ITERS:-2000}
w=${WORKERS:-4}
h=${H:-100}
py=${PYTHON:-/usr/bin/python3}
run() {
	./dsgd train --transport tcp --workers "$w" --batch $((64 / w)) --iters "$iters" --snapshot-prefix none --test-interval 0 --display 0 "$@" 2>&1 |
		awk -v it="$iters" '/^final test/{acc=$4} /^traffic \(rank 0/{sent=$7} /^done:/{ips=$6} END{printf "%s %.0f %s", acc, sent/it, ips}'
}
printf '%-34s %9s %14s %10s\n' "run" "accuracy" "bytes/iter" "images/s"
read -r acc b ips <<<"$(run --scheme sync-ring --reduce fast)"
printf '%-34s %9s %14s %10s\n' "sync-ring ${w}x$((64 / w)) (fast sums)" "$acc" "$b" "$ips"
ring=$b
read -r acc b ips <<<"$(run --scheme diloco --interval "$h")"
printf '%-34s %9s %14s %10s\n' "diloco ${w}x$((64 / w)), H=$h" "$acc" "$b" "$ips"
awk -v r="$ring" -v d="$b" 'BEGIN{printf "bytes: sync-ring / diloco = %.1fx\n", r/d}'
if "$py" -c 'import torch' 2>/dev/null; then
	(cd ../shared/peer && "$py" torch_lenet.py --iters 120 --threads 2 --display 100000 2>&1 | awk '/iter ms/{for(i=1;i<=NF;i++) if($i=="mean"){print "pytorch lenet 1x64, 2 threads (peer): " $(i+1) " ms/iter"; exit}}')
fi
