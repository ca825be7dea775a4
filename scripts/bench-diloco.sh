#!/bin/bash
# DiLoCo and Streaming DiLoCo against sync-ring (issue 26): LeNet on
# Fashion-MNIST, WORKERS workers as processes over loopback TCP, the same
# global batch (64) and iterations, so the same images; for each, the
# final test accuracy, the bytes rank 0 sent per iteration (its
# transport's count, the initial weight broadcast included) and, for the
# outer schemes, the peak bytes per step: the most one worker sends for
# the synchronisations that start at one step (the run header's figure,
# from the fragment plan: a ring over TCP) and the most rank 0's
# transport sent in one iteration (measured; the initial broadcast and
# the end-of-run synchronisations excluded; on one host with --shm on an
# allreduce through shared memory counts each value once, not a ring's
# 2(n-1)/n). sync-ring runs --reduce fast (float32 gradients, as diloco's
# float32 pseudo-gradients); diloco runs H = --interval inner steps per
# outer step; streaming-diloco the same H with P = FRAGMENTS fragments
# and BITS-bit pseudo-gradients (overlap OVERLAP). Beside them, PyTorch's
# LeNet step at batch 64 on 2 threads (../shared/peer/torch_lenet.py)
# from the same invocation, for the machine's speed.
# Usage: scripts/bench-diloco.sh   (from the repository root, after make
# build; ITERS, WORKERS, H, FRAGMENTS, BITS, OVERLAP, SHM (on|off) and
# PYTHON override the defaults; RING=0 skips sync-ring)
set -euo pipefail
iters=${ITERS:-2000}
w=${WORKERS:-4}
h=${H:-100}
p=${FRAGMENTS:-4}
bits=${BITS:-4}
tau=${OVERLAP:-0}
py=${PYTHON:-/usr/bin/python3}
run() {
	./dsgd train --transport tcp --shm "${SHM:-on}" --workers "$w" --batch $((64 / w)) --iters "$iters" --snapshot-prefix none --test-interval 0 --display 0 "$@" 2>&1 |
		awk -v it="$iters" '/^final test/{acc=$4} /^traffic \(rank 0/{sent=$7} /^done:/{ips=$6}
			/peak [0-9]+ bytes per step/{for(i=1;i<=NF;i++) if($i=="peak") peak=$(i+1)}
			/^peak step \(rank 0, measured\)/{m=$7}
			END{printf "%s %.0f %s %s %s", acc, sent/it, ips, (peak==""?"-":peak), (m==""?"-":m)}'
}
f='%-40s %9s %12s %13s %13s %10s\n'
printf "$f" "run (shm ${SHM:-on})" "accuracy" "bytes/iter" "peak (header)" "peak (meas.)" "images/s"
if [ "${RING:-1}" != 0 ]; then
	read -r acc b ips peak mpeak <<<"$(run --scheme sync-ring --reduce fast)"
	printf "$f" "sync-ring ${w}x$((64 / w)) (fast sums)" "$acc" "$b" "-" "-" "$ips"
	ring=$b
fi
read -r acc b ips dpeak dm <<<"$(run --scheme diloco --interval "$h")"
printf "$f" "diloco ${w}x$((64 / w)), H=$h" "$acc" "$b" "$dpeak" "$dm" "$ips"
dil=$b
read -r acc b ips speak sm <<<"$(run --scheme streaming-diloco --interval "$h" --fragments "$p" --outer-bits "$bits" --overlap "$tau")"
printf "$f" "streaming-diloco P=$p, $bits bits, tau=$tau" "$acc" "$b" "$speak" "$sm" "$ips"
if [ -n "${ring:-}" ]; then
	awk -v r="$ring" -v d="$dil" 'BEGIN{printf "bytes: sync-ring / diloco = %.1fx\n", r/d}'
fi
awk -v d="$dil" -v s="$b" -v dp="$dpeak" -v sp="$speak" -v dm="$dm" -v sm="$sm" 'BEGIN{printf "diloco / streaming-diloco: bytes %.1fx; peak bytes per step %.1fx (header), %.1fx (measured)\n", d/s, dp/sp, dm/sm}'
if "$py" -c 'import torch' 2>/dev/null; then
	(cd ../shared/peer && "$py" torch_lenet.py --iters 120 --threads 2 --display 100000 2>&1 | awk '/iter ms/{for(i=1;i<=NF;i++) if($i=="mean"){print "pytorch lenet 1x64, 2 threads (peer): " $(i+1) " ms/iter"; exit}}')
fi
