#!/bin/bash
# Counts the Caffe net files under DIR that `dsgd time` accepts unmodified.
#
#   scripts/caffe_nets.sh DIR [DSGD]
#
# DIR holds net prototxt files as they come in a Caffe checkout (BVLC/caffe's
# examples/ and models/, the model zoo's files); solvers among them are
# skipped. Each net is timed as `caffe time -model FILE` would time it, from
# DIR as the working directory: one forward-backward pass at batch 1
# (--batch 1 sets the first axis of Input layers and the TRAIN Data
# layers' batch). A net with Data layers reads synthetic images of the
# size named in the file's row of data_specs below (Caffe would read its
# LMDB), and a transform_param mean_file that is missing is written as a
# zero mean of that size (Caffe's data/ scripts would have made it). Nets
# with Python layers are counted apart: they run only inside
# Caffe's Python. Every other failure is listed with dsgd's first error
# line.
set -u
dir=${1:?usage: scripts/caffe_nets.sh DIR [DSGD]}
dsgd=$(realpath "${2:-./dsgd}")
cd "$dir" || exit 2

# data_specs: synthetic data for the Data layers of the nets that have them,
# by file name pattern (first match wins).
data_spec() {
	case "$1" in
	*mnist*|*lenet*|*siamese*) echo "synthetic:N=64,C=1,H=28,W=28,classes=10" ;;
	*cifar*) echo "synthetic:N=64,C=3,H=32,W=32,classes=10" ;;
	*) echo "synthetic:N=16,C=3,H=256,W=256,classes=256" ;;
	esac
}

# zero_mean FILE SPEC writes a BlobProto (1×C×H×W zeros, C, H, W from the
# synthetic SPEC) to FILE.
zero_mean() {
	mkdir -p "$(dirname "$1")"
	/usr/bin/python3 - "$1" "$2" <<'PY'
import re, struct, sys
c, h, w = (int(re.search(k + r"=(\d+)", sys.argv[2]).group(1)) for k in "CHW")
def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out
data = struct.pack("<%df" % (c * h * w), *([0.0] * (c * h * w)))
msg = b"".join(bytes([(f << 3)]) + varint(v) for f, v in ((1, 1), (2, c), (3, h), (4, w)))
msg += bytes([(5 << 3) | 2]) + varint(len(data)) + data
open(sys.argv[1], "wb").write(msg)
PY
}

ok=0 python=0 failed=0 total=0
failures=""
while IFS= read -r f; do
	# A solver names nets or a learning rate; a net has layers or inputs.
	if grep -qE '^[[:space:]]*(base_lr|lr_policy|train_net|test_iter)[[:space:]]*:' "$f"; then
		continue
	fi
	if ! grep -qE '^[[:space:]]*(layers?|input)[[:space:]]*[:{]' "$f"; then
		continue
	fi
	total=$((total + 1))
	if grep -qE "type:[[:space:]]*[\"']Python[\"']" "$f"; then
		python=$((python + 1))
		echo "python  $f"
		continue
	fi
	args=(time -model "$f" --iters 1 --warmup 0 --batch 1 --threads 1)
	if grep -qE "type:[[:space:]]*(DATA|\"Data\")" "$f"; then
		spec=$(data_spec "$f")
		args+=(--data "$spec")
		grep -oE 'mean_file:[[:space:]]*"[^"]+"' "$f" | sed -E 's/.*"(.*)"/\1/' | sort -u | while read -r mean; do
			[ -e "$mean" ] || zero_mean "$mean" "$spec"
		done
	fi
	if out=$("$dsgd" "${args[@]}" 2>&1 >/dev/null); then
		ok=$((ok + 1))
		echo "ok      $f"
	else
		failed=$((failed + 1))
		line=$(printf '%s\n' "$out" | grep -v '^dsgd: note:' | head -1)
		echo "refused $f: $line"
		failures+="$f: $line"$'\n'
	fi
done < <(find . -name '*.prototxt' | sort)

echo
echo "$ok of $((total - python)) net files without Python layers accepted by dsgd time ($python with Python layers, $total in all)"
[ "$failed" -eq 0 ]
