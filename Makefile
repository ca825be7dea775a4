# The two set-up commands of the README: `make train` and `make test`.
GO ?= go

.PHONY: train test build bench-engine setup

setup:
	@./scripts/setup.sh

build: setup
	$(GO) build -o dsgd ./cmd/dsgd

# The main job: LeNet on Fashion-MNIST with the defaults.
train: build
	./dsgd train

# Every test, in both GEMM builds (OpenBLAS and pure Go) for the numeric
# packages, plus the race detector on the concurrent ones.
test:
	@./scripts/setup.sh test
	$(GO) vet ./...
	$(GO) test ./...
	$(GO) test -tags purego ./tensor/... ./nn/... ./model/... ./cpuinfo/...
	$(GO) test -race ./data/... ./train/... ./node/... ./collective/... ./transport/... ./center/... ./rpc/... ./ps/... ./smb/... ./redisstore/... ./timeline/... ./calib/... ./cmd/...

# Our per-iteration time against PyTorch's on the same nets (LeNet,
# cifar10_quick, CaffeNet, GoogLeNet), same batch and threads (1 and 2),
# interleaved in one invocation; FLOP rate against the measured FMA peak.
# Narrow it with BENCH_FLAGS, e.g. BENCH_FLAGS="--nets caffenet --reps 5".
BENCH_FLAGS ?=
bench-engine: build
	./dsgd bench --peer ../shared/peer/torch_lenet.py --peer-nets ../shared/peer/torch_nets.py $(BENCH_FLAGS)
