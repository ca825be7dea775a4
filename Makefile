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
	$(GO) test -tags purego ./tensor/... ./nn/... ./model/...
	$(GO) test -race ./accum/... ./data/... ./train/... ./node/... ./collective/... ./transport/... ./center/... ./rpc/... ./ps/... ./smb/... ./redisstore/... ./timeline/... ./calib/... ./cmd/...

# Our per-iteration time against PyTorch's on the same LeNet, same batch and
# threads, in one invocation.
bench-engine: build
	./dsgd bench --peer ../shared/peer/torch_lenet.py
