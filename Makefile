# The two set-up commands of the README: `make train` and `make test`.
GO ?= go

.PHONY: train test build bench-engine setup ptx gpu-check torch-layers caffe-nets proto caffe-crosscheck faults

setup:
	@./scripts/setup.sh

build: setup
	$(GO) build -buildvcs=auto -o dsgd ./cmd/dsgd

# The main job: LeNet on Fashion-MNIST with the defaults.
train: build
	./dsgd train

# Every test, in both GEMM builds (OpenBLAS and pure Go) for the numeric
# packages, plus the race detector on every package: in full on the
# concurrent ones, with -short (which trims the long numeric sweeps) on
# the rest.
test:
	@./scripts/setup.sh test
	$(GO) vet ./...
	$(GO) test ./...
	$(GO) test -tags purego ./engine/tensor/... ./engine/layers/... ./engine/model/... ./engine/cpuinfo/... ./data/... ./caffe/caffemodel/...
	$(GO) test -race ./protocol/accum/... ./protocol/center/... ./comm/... ./servers/... ./data/... ./internal/... ./simulator/calib/... ./cmd/... \
		./training/train/... ./training/node/... ./training/timeline/...
	$(GO) test -race -short . ./caffe/... ./engine/... ./protocol/scheme/... ./simulator/sim/... ./training/checkpoint/... ./training/metrics/...
	$(GO) build -buildvcs=auto -o dsgd ./cmd/dsgd
	$(GO) run ./cmd/faults -dsgd ./dsgd

# The fault matrix: what a client, a bad file or Ctrl-C can do to dsgd, on
# loopback, each case bounded in time; a table of case, expectation and
# outcome (about 1.5 min).
faults: build
	$(GO) run ./cmd/faults -dsgd ./dsgd

# Our per-iteration time against PyTorch's on the same nets (LeNet,
# cifar10_quick, CaffeNet, GoogLeNet, ResNet-18), same batch and threads (1 and 2),
# interleaved in one invocation; FLOP rate against the measured FMA peak.
# Narrow it with BENCH_FLAGS, e.g. BENCH_FLAGS="--nets caffenet --reps 5";
# BENCH_FLAGS="--isa avx2,avx512_core" runs everything once per ISA cap
# (dsgd and the peers under ONEDNN_MAX_CPU_ISA and the matching
# OPENBLAS_CORETYPE, % peak against the peak at that cap) in one table;
# caps this CPU lacks are skipped with what it is missing.
BENCH_FLAGS ?=
bench-engine: build
	./dsgd bench --peer ../shared/peer/torch_lenet.py --peer-nets ../shared/peer/torch_nets.py $(BENCH_FLAGS)

# Regenerates the PyTorch float64 fixtures of the Caffe layers
# (engine/layers/testdata/torch_layers.json, torch_recurrent.json,
# torch_params.json, torch_more_layers.json, torch_conv.json, and
# torch_fork_layers.json for the Caffe forks' layers, multibox_loss.json
# for SSD's MultiBoxLoss; needs
# python3-torch) and checks the layers against them and against finite
# differences.
torch-layers:
	/usr/bin/python3 scripts/torch_layers.py engine/layers/testdata/torch_layers.json
	/usr/bin/python3 scripts/torch_recurrent.py engine/layers/testdata/torch_recurrent.json
	/usr/bin/python3 scripts/torch_params.py engine/layers/testdata/torch_params.json
	/usr/bin/python3 scripts/torch_more_layers.py engine/layers/testdata/torch_more_layers.json
	/usr/bin/python3 scripts/torch_conv.py engine/layers/testdata/torch_conv.json
	/usr/bin/python3 scripts/torch_fork_layers.py engine/layers/testdata/torch_fork_layers.json
	/usr/bin/python3 scripts/ssd_layers.py engine/layers/testdata/ssd_layers.json
	/usr/bin/python3 scripts/roi_layers.py engine/layers/testdata/roi_layers.json
	/usr/bin/python3 scripts/smoothl1.py engine/layers/testdata/smoothl1.json
	/usr/bin/python3 scripts/multibox_loss.py engine/layers/testdata/multibox_loss.json
	$(GO) test ./engine/layers -run 'TestTorchFixtures|TestCaffeLayers|TestBilinear|TestTorchRecurrent|TestTorchParamFixtures|TestTorchMoreFixtures|TestTorchConvFixtures|TestTorchForkFixtures|TestSSDFixtures|TestROIFixtures|TestSmoothL1Fixtures|TestMultiBoxLossFixtures|TestCaffeConvolution|TestCaffeDeconvolution' -v

# Counts the Caffe net files under CAFFE_NETS (a folder of BVLC/caffe's
# examples/ and models/ prototxt files) that `dsgd time` accepts unmodified.
caffe-nets: build
	./scripts/caffe_nets.sh $(CAFFE_NETS)

# Regenerates caffe/caffepb/caffe.pb.go from caffe/caffepb/caffe.proto (needs Debian's
# protobuf-compiler; protoc-gen-go comes from the Go module proxy).
proto:
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	cd caffe/caffepb && PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc --go_out=. --go_opt=paths=source_relative caffe.proto

# Re-extracts the nets of Caffe's upgrade tests (V0 and V1 nets with
# Caffe's upgraded versions) from CAFFE_SRC (a BVLC/caffe checkout) into
# caffe/caffedef/testdata/caffe_upgrade and runs the test that reads them.
CAFFE_SRC ?= ../caffe
.PHONY: caffe-upgrade-fixtures
caffe-upgrade-fixtures:
	/usr/bin/python3 scripts/caffe_upgrade_fixtures.py $(CAFFE_SRC)/src/caffe/test/test_upgrade_proto.cpp caffe/caffedef/testdata/caffe_upgrade
	$(GO) test ./caffe/caffedef -run 'TestCaffeUpgrade|TestUpgradeV0' -v

# Caffe's formats against independent readers and writers (Python's lmdb,
# plyvel, h5py, protobuf): remakes data/testdata/caffe and checks both ways.
caffe-crosscheck: setup
	GO=$(GO) ./scripts/caffe_crosscheck.sh

# WindowData's crops against OpenCV (needs python3-opencv): remakes
# data/testdata/window and runs the tests that read it.
.PHONY: window-crosscheck
window-crosscheck:
	/usr/bin/python3 scripts/window_fixture.py data/testdata/window
	$(GO) test ./data -run 'Window' -v

# SSD's AnnotatedData against OpenCV (needs python3-opencv, lmdb, protobuf,
# protoc): remakes data/testdata/annotated (the resize/HSV/crop/expand/box
# cases and an AnnotatedDatum LMDB) and runs the tests that read it.
.PHONY: annotated-crosscheck
annotated-crosscheck:
	/usr/bin/python3 scripts/ssd_annotated_fixture.py data/testdata/annotated
	$(GO) test ./data -run 'Annotated' -v

# SSD's convert_annoset against the oracle (needs python3-opencv, numpy):
# remakes data/testdata/annoset (images, VOC XML, JSON and txt boxes, a label
# map, lists and the records the fork writes for them, from its io.cpp)
# and runs the tests that convert it and read it back.
.PHONY: annoset-crosscheck
annoset-crosscheck:
	/usr/bin/python3 scripts/annoset_fixture.py data/testdata/annoset
	$(GO) test ./cmd/dsgd -run 'TestConvertAnnoset' -v
	$(GO) test ./data -run 'Annoset|VOCXML|COCOJSON|TxtAnno|AnnoList' -v
	$(GO) test ./caffe/caffedef -run 'LabelMap' -v

# The GPU engine's kernels (engine/cuda/kernels/kernels.cu) as PTX, which
# the package embeds and the driver compiles for the GPU it finds: clang
# (Debian's clang-14) with no CUDA toolkit. Rerun after editing the .cu;
# the PTX is committed so that no build needs a CUDA compiler.
ptx:
	clang-14 -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_70 -O3 -S \
		-o engine/cuda/kernels/kernels.ptx engine/cuda/kernels/kernels.cu

# The GPU checks (issue 21): build here, then run scripts/gpu-check.sh run
# on a machine with an NVIDIA GPU (see the script).
gpu-check:
	./scripts/gpu-check.sh build
