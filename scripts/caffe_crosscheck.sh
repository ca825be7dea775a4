#!/usr/bin/env bash
# The full Caffe-format cross-check (make caffe-crosscheck): rewrites the
# Python-made fixtures and runs the Go tests that read them, then has
# dsgd write databases, a mean file and a Caffe-format snapshot that
# scripts/caffe_crosscheck.py reads back with Python's lmdb, plyvel and
# protobuf, and extract-features' databases, which
# scripts/extract_features_fixture.py check reads back the same way. Needs /usr/bin/python3 with python3-lmdb, python3-plyvel,
# python3-h5py, python3-protobuf, python3-pil, python3-torch and
# protobuf-compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
/usr/bin/python3 scripts/caffe_fixtures.py
/usr/bin/python3 scripts/caffe_shared_fixtures.py
/usr/bin/python3 scripts/caffe_torch_net.py
/usr/bin/python3 scripts/extract_features_fixture.py
/usr/bin/python3 scripts/hdf5_tops_fixture.py data/testdata/hdf5tops
/usr/bin/python3 scripts/ssd_hdf5_fixture.py data/testdata/hdf5tops
/usr/bin/python3 scripts/caffe_hdf5_fixture.py data/testdata/caffe/hdf5
$GO test ./data/... ./caffe/caffemodel/... 
$GO test -run 'TestCaffe|TestSSDTrainHDF5|TestLabelOutOfRange|TestTorchScoredCaffemodel|TestSharedParams|TestWeightsList|TestDataTools|TestExtractFeatures|TestConvertCIFARCommand' ./cmd/dsgd
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
$GO build -o "$out/dsgd" ./cmd/dsgd
fx=data/testdata/caffe
"$out/dsgd" convert-mnist --images $fx/idx/train-images-idx3-ubyte --labels $fx/idx/train-labels-idx1-ubyte --out "$out/train_lmdb"
"$out/dsgd" convert-mnist --images $fx/idx/train-images-idx3-ubyte --labels $fx/idx/train-labels-idx1-ubyte --out "$out/train_leveldb" --backend leveldb
"$out/dsgd" convert-mnist --images $fx/idx/t10k-images-idx3-ubyte --labels $fx/idx/t10k-labels-idx1-ubyte --out "$out/test_lmdb"
"$out/dsgd" compute-image-mean --db "$out/train_lmdb" --out "$out/mean.binaryproto"
cat > "$out/net.prototxt" <<NET
name: "logreg"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "$out/train_lmdb" batch_size: 20 backend: LMDB } transform_param { scale: 0.00390625 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "$out/test_lmdb" batch_size: 50 backend: LMDB } transform_param { scale: 0.00390625 } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
NET
cat > "$out/solver.prototxt" <<SOLVER
net: "$out/net.prototxt"
test_iter: 4 test_interval: 1000 base_lr: 0.1 momentum: 0.9 lr_policy: "fixed" max_iter: 60 display: 0
snapshot_prefix: "$out/snap" snapshot_format: BINARYPROTO
SOLVER
"$out/dsgd" train --solver "$out/solver.prototxt" --net "$out/net.prototxt" --workers 1
"$out/dsgd" test --solver "$out/solver.prototxt" --net "$out/net.prototxt" --weights "$out/snap_iter_60.caffemodel" | tee "$out/dsgd_test.txt"
"$out/dsgd" train --solver "$out/solver.prototxt" --net "$out/net.prototxt" --workers 1 --snapshot-format hdf5 --snapshot-prefix "$out/h5snap"
"$out/dsgd" test --model "$out/net.prototxt" --weights "$out/h5snap_iter_60.caffemodel.h5" --iterations 4 | tee "$out/dsgd_test_h5.txt"
# create_cifar10.sh's conversion, in Caffe's form.
/usr/bin/python3 scripts/caffe_crosscheck.py cifar-fixture "$out/cifar"
"$out/dsgd" convert_cifar_data "$out/cifar" "$out" lmdb
/usr/bin/python3 scripts/caffe_crosscheck.py "$out"
# extract-features, Caffe's positional form to LMDB and dsgd's flags to
# LevelDB, read back with lmdb, plyvel and protobuf against PyTorch.
cp -r $fx/test_lmdb "$out/images_lmdb" # a reader adds lock.mdb: not in the fixture
sed -n '/^const extractNet = `/,/^`/p' cmd/dsgd/extract_test.go | sed '1s/.*`//;$d' |
	sed "s#@TEST#$out/images_lmdb#" >"$out/extract.prototxt"
tm=caffe/caffemodel/testdata/torchnet.caffemodel
"$out/dsgd" extract-features $tm "$out/extract.prototxt" pool,prob "$out/feat_pool_lmdb,$out/feat_prob_lmdb" 3 lmdb CPU
"$out/dsgd" extract-features --weights $tm --net "$out/extract.prototxt" --blobs pool,prob \
	--out "$out/feat_pool_leveldb,$out/feat_prob_leveldb" --batches 3 --backend leveldb
/usr/bin/python3 scripts/extract_features_fixture.py check "$out"
# Shared parameters and Caffe's HDF5 layout, against Python-made files.
mkdir "$out/shared"
DSGD_CROSSCHECK_OUT="$out/shared" $GO test -count=1 -run TestSharedWritersCrossCheck ./caffe/caffemodel/
/usr/bin/python3 scripts/caffe_shared_fixtures.py check "$out/shared"
