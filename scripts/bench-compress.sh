#!/bin/bash
# Compressed gradients against plain float32 (issue 26): LeNet on
# Fashion-MNIST, WORKERS workers as processes over loopback TCP (shared
# memory off, so every byte crosses the transport's counters), sync-ring
# with --reduce fast, the same global batch (64) and iterations, so the
# same images: uncompressed, powersgd:2, topk:0.01 and bf16, each with
# error feedback after the default warm-up (10% of the iterations plain).
# For each: the final test accuracy, the bytes rank 0 sent per compressed
# iteration (the compressor's count), per iteration over the whole run
# (the transport's count, warm-up and the initial broadcast included),
# and the ratio of the plain run's bytes per iteration to the compressed
# iterations'.
# Usage: scripts/bench-compress.sh   (from the repository root, after make
# build; ITERS, WORKERS and RUNS override the defaults)
set -euo pipefail
iters=${ITERS:-1000}
w=${WORKERS:-4}
runs=${RUNS:-"none powersgd:2 topk:0.01 bf16"}
run() {
	./dsgd train --transport tcp --shm off --workers "$w" --batch $((64 / w)) --iters "$iters" --snapshot-prefix none --test-interval 0 --display 0 --scheme sync-ring --reduce fast --compress "$1" 2>&1 |
		awk -v it="$iters" '/^final test/{acc=$4} /^traffic \(rank 0/{sent=$7} /^compress:/{cb=$6} /^done:/{ips=$6} END{if(cb=="")cb=sent/it; printf "%s %.0f %.0f %s", acc, cb, sent/it, ips}'
}
printf '%-28s %9s %16s %14s %8s %10s\n' "run" "accuracy" "bytes/comp.iter" "bytes/iter" "ratio" "images/s"
plain=""
for c in $runs; do
	read -r acc cb all ips <<<"$(run "$c")"
	[ -z "$plain" ] && plain=$cb
	ratio=$(awk -v p="$plain" -v c="$cb" 'BEGIN{printf "%.1fx", p/c}')
	printf '%-28s %9s %16s %14s %8s %10s\n' "sync-ring ${w}x$((64 / w)) $c" "$acc" "$cb" "$all" "$ratio" "$ips"
done
