#!/bin/bash
# Counts the Caffe net and solver files under DIR that dsgd accepts
# unmodified.
#
#   scripts/caffe_nets.sh DIR [DSGD]
#
# DIR holds prototxt files as they come in a Caffe checkout (BVLC/caffe's
# examples/ and models/, the model zoo's files), at their paths there: the
# script runs from DIR, as Caffe's own scripts run from the Caffe root.
#
# Nets: each is timed as `caffe time -model FILE` would time it: one
# forward-backward pass at batch 1 (--batch 1 sets the first axis of Input
# layers and the TRAIN data layers' batch). A net with data layers (Data,
# ImageData, HDF5Data, WindowData) reads synthetic images of the size named
# for its folder in data_spec below (Caffe would read its LMDB, image list
# or HDF5 files; WindowData layers whose window files are all there read
# them), and a transform_param mean_file that is missing is
# written as a zero mean of that size (Caffe's data/ scripts would have
# made it). Nets with Python layers are counted apart: dsgd runs Python
# layers now (engine/pylayer), but their modules (FCN's voc_layers.py, ...)
# and the data sets they read are not in the store, so such a net cannot
# be run here as published.
#
# Solvers: each trains one iteration and tests one batch (`dsgd train
# --solver FILE --iters 1 --test-iter 1`) on the same synthetic data, so
# that its fields are parsed and the nets it names are loaded and run. The
# nets are looked for as dsgd looks: in DIR, else beside the solver. A
# solver naming a net file found in neither place is listed as such; one
# whose nets have Python layers is counted apart, as those nets are.
#
# Every other failure is listed with dsgd's first error line; the exit
# status is non-zero if any file was refused.
set -u
dir=${1:?usage: scripts/caffe_nets.sh DIR [DSGD]}
# limit is each run's time limit in seconds (CAFFE_NETS_TIMEOUT, default
# 600); a run that reaches it is listed as timed out.
limit=${CAFFE_NETS_TIMEOUT:-600}
dsgd=$(realpath "${2:-./dsgd}")
cd "$dir" || exit 2

# data_spec FILE: synthetic data for the data layers of FILE, by the
# example or model it belongs to: the shape and class count of the data
# set its Caffe scripts prepare.
data_spec() {
	case "$1" in
	*/examples/siamese/*) echo "synthetic:N=64,C=2,H=28,W=28,classes=2" ;; # image pairs, 1 = same
	*/examples/mnist/*) echo "synthetic:N=64,C=1,H=28,W=28,classes=10" ;;
	*/examples/cifar10/*) echo "synthetic:N=64,C=3,H=32,W=32,classes=10" ;;
	*/examples/hdf5_classification/*) echo "synthetic:N=64,C=4,H=1,W=1,classes=2" ;; # sklearn's 4 features
	*/age_net_definitions/*) echo "synthetic:N=16,C=3,H=256,W=256,classes=8" ;; # GilLevi's Adience age groups
	*/gender_net_definitions/*) echo "synthetic:N=16,C=3,H=256,W=256,classes=2" ;;
	*/finetune_flickr_style/*) echo "synthetic:N=16,C=3,H=256,W=256,classes=20" ;;
	*/finetune_pascal_detection/*) echo "synthetic:N=16,C=3,H=256,W=256,classes=21" ;;
	*) echo "synthetic:N=16,C=3,H=256,W=256,classes=256" ;; # ImageNet, resized to 256
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

# data_args FILE SPEC: --data SPEC when FILE has a data layer reading
# files, after writing any mean file it names that is missing.
data_layers='type:[[:space:]]*("?(Data|ImageData|HDF5Data|WindowData)"?|DATA|IMAGE_DATA|HDF5_DATA|WINDOW_DATA)[[:space:]]*$'
data_args() {
	grep -qE "$data_layers" "$1" || return 0
	# A net whose only data layers are WindowData layers reads its own
	# window files (and their images) when they are all there.
	local own=""
	if ! grep -qE 'type:[[:space:]]*("?(Data|ImageData|HDF5Data)"?|DATA|IMAGE_DATA|HDF5_DATA)[[:space:]]*$' "$1"; then
		own=1
		for src in $(grep -oE 'source:[[:space:]]*"[^"]+"' "$1" | sed -E 's/.*"(.*)"/\1/'); do
			[ -e "$src" ] || own=""
		done
	fi
	[ -n "$own" ] || printf '%s\n' --data "$2"
	grep -oE 'mean_file:[[:space:]]*"[^"]+"' "$1" | sed -E 's/.*"(.*)"/\1/' | sort -u | while read -r mean; do
		[ -e "$mean" ] || zero_mean "$mean" "$2" >&2
	done
}

# first_error OUTPUT RC: why dsgd failed: "timed out" when timeout
# stopped it (RC 124), else dsgd's error line ("dsgd COMMAND: ...", or a
# panic), else its last line that is not a note or progress (dsgd stamps
# its log lines with the date and time when stderr is not a terminal: the
# stamp is dropped first).
first_error() {
	if [ "$2" -eq 124 ]; then
		echo "timed out after ${limit}s"
		return
	fi
	local lines
	lines=$(printf '%s\n' "$1" | sed -E 's/^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ //' | grep -vE '^dsgd: (note|warning):')
	printf '%s\n' "$lines" | grep -E '^dsgd [a-z-]+: |^panic: |:[0-9]+:[0-9]+:' | head -1 | grep . ||
		printf '%s\n' "$lines" | grep . | tail -1
}

# solver_nets FILE: the net files solver FILE names, each resolved as dsgd
# resolves it: from the working directory (where Caffe looks), else beside
# the solver (SqueezeNet's and FCN's solvers name their nets so, being run
# from their own folders); a name found in neither place is printed as is.
solver_nets() {
	local n
	for n in $(grep -oE '^[[:space:]]*(net|train_net|test_net)[[:space:]]*:[[:space:]]*"[^"]+"' "$1" | sed -E 's/.*"(.*)"/\1/'); do
		if [ ! -e "$n" ] && [ -e "$(dirname "$1")/$n" ]; then
			n="$(dirname "$1")/$n"
		fi
		printf '%s\n' "$n"
	done
}

is_solver() { grep -qE '^[[:space:]]*(base_lr|lr_policy|train_net|test_iter|net)[[:space:]]*:' "$1"; }
is_net() { grep -qE '^[[:space:]]*(layers?|input)[[:space:]]*[:{]' "$1"; }

ok=0 python=0 failed=0 total=0
sok=0 smissing=0 sfailed=0 spython=0 stotal=0
failures=""
while IFS= read -r f; do
	spec=$(data_spec "/$f")
	if is_solver "$f" && ! grep -qE '^[[:space:]]*(layers?)[[:space:]]*[:{]' "$f" || grep -qE '^[[:space:]]*net_param[[:space:]]*\{' "$f"; then
		stotal=$((stotal + 1))
		# A solver whose nets have Python layers is counted apart, as those
		# nets are (FCN's solvers): their modules are not in the store.
		pynet=""
		for n in "$f" $(solver_nets "$f"); do
			[ -e "$n" ] && grep -qE "type:[[:space:]]*[\"']Python[\"']" "$n" && pynet=1
		done
		if [ -n "$pynet" ]; then
			spython=$((spython + 1))
			echo "python  $f (solver)"
			continue
		fi
		mapfile -t extra < <(data_args "$f" "$spec")
		if [ ${#extra[@]} -eq 0 ]; then
			# The data layers are in the nets the solver names.
			for n in $(solver_nets "$f"); do
				[ -e "$n" ] && mapfile -t extra < <(data_args "$n" "$spec") && [ ${#extra[@]} -gt 0 ] && break
			done
		fi
		args=(train --solver "$f" --iters 1 --test-iter 1 --test-interval 0 --batch 1 --threads 1 --snapshot-prefix none "${extra[@]}")
		if out=$(timeout "$limit" "$dsgd" "${args[@]}" 2>&1); then
			sok=$((sok + 1))
			echo "ok      $f (solver)"
		else
			rc=$?
			line=$(first_error "$out" $rc)
			missing=""
			for n in $(solver_nets "$f"); do
				[ -e "$n" ] || missing+=" $n"
			done
			if [ -n "$missing" ]; then
				smissing=$((smissing + 1))
				echo "no net  $f (solver): names${missing}, not under $dir"
			else
				sfailed=$((sfailed + 1))
				echo "refused $f (solver): $line"
				failures+="$f: $line"$'\n'
			fi
		fi
		continue
	fi
	is_net "$f" || continue
	total=$((total + 1))
	if grep -qE "type:[[:space:]]*[\"']Python[\"']" "$f"; then
		python=$((python + 1))
		echo "python  $f"
		continue
	fi
	mapfile -t extra < <(data_args "$f" "$spec")
	args=(time -model "$f" --iters 1 --warmup 0 --batch 1 --threads 1 "${extra[@]}")
	if out=$(timeout "$limit" "$dsgd" "${args[@]}" 2>&1 >/dev/null); then
		ok=$((ok + 1))
		echo "ok      $f"
	else
		rc=$?
		failed=$((failed + 1))
		line=$(first_error "$out" $rc)
		echo "refused $f: $line"
		failures+="$f: $line"$'\n'
	fi
done < <(find . -name '*.prototxt' | sed 's#^\./##' | sort)

echo
echo "nets: $ok of $((total - python)) without Python layers accepted by dsgd time ($python with Python layers, $total in all)"
echo "solvers: $sok of $((stotal - spython)) without Python layers trained an iteration ($smissing name a net file not under $dir, $sfailed refused; $spython with Python layers, $stotal in all)"
[ "$failed" -eq 0 ] && [ "$sfailed" -eq 0 ]
