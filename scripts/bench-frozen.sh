#!/bin/bash
# Fine-tuning with frozen layers (lr_mult 0, issue 22): BVLC's CaffeNet with
# conv3-fc7 frozen and conv1, conv2 and fc8 learnt (a new input domain:
# the gradient must pass through the frozen layers, which before this
# change also computed their weight gradients; a frozen prefix ran no
# backward pass before either), forward-backward ms per iteration at
# batch 32 on 2 threads (dsgd time, average over --iters after warm-up),
# for a dsgd built before the change (OLD: every param's gradient computed)
# and after it (NEW: none for lr_mult 0), beside PyTorch with those layers'
# requires_grad off (scripts/torch_frozen.py), in the same invocation.
# Usage: scripts/bench-frozen.sh OLD_DSGD NEW_DSGD [REPS]  (from the repository root)
set -euo pipefail
old=$1 new=$2 reps=${3:-2}
py=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$py" - caffe/zoo/models/caffenet.prototxt "$dir/frozen.prototxt" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
def freeze(m):
    block = m.group(0)
    name = re.search(r'name: "(\w+)"', block).group(1)
    if name in ("conv3", "conv4", "conv5", "fc6", "fc7"):
        block = re.sub(r"lr_mult: [0-9.]+", "lr_mult: 0", block)
    return block
out = re.sub(r"layer \{.*?\n\}", freeze, src, flags=re.S)
assert out.count("lr_mult: 0") == 10, out.count("lr_mult: 0")
open(sys.argv[2], "w").write(out)
PY
t() { "$1" time --net "$dir/frozen.prototxt" --batch 32 --threads 2 --iters 3 2>&1 | awk '/^forward-backward:/{print $2}'; }
printf '%-34s %10s\n' "run" "ms/iter"
for rep in $(seq "$reps"); do
	printf '%-34s %10s\n' "dsgd before (all gradients)" "$(t "$old")"
	printf '%-34s %10s\n' "dsgd after (lr_mult 0 skipped)" "$(t "$new")"
	printf '%-34s %10s\n' "pytorch (requires_grad off)" "$("$py" scripts/torch_frozen.py --batch 32 --threads 2 --iters 3 | awk '{print $(NF-1)}')"
done
