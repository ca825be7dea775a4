package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// compressNet is a small net with one weight matrix large enough for
// compression to pay (64×256) over noisy synthetic images of 10 classes,
// so that a compressor that lost the gradients would show in accuracy.
const compressNet = `name: "small"
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  data_param { source: "synthetic:N=512,C=1,H=16,W=16,classes=10,seed=3,noise=255" batch_size: 16 }
  transform_param { scale: 0.00390625 } }
layer { name: "d" type: "Data" top: "data" top: "label" include { phase: TEST }
  data_param { source: "synthetic:N=512,C=1,H=16,W=16,classes=10,seed=3,noise=255" batch_size: 64 }
  transform_param { scale: 0.00390625 } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
  inner_product_param { num_output: 64 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
  inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
layer { name: "acc" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy" include { phase: TEST } }
`

const compressSolver = `net: "net.prototxt"
base_lr: 0.05 momentum: 0.9 lr_policy: "fixed"
max_iter: 120 test_iter: 8 test_interval: 120 display: 60
snapshot: 0 snapshot_prefix: "out/small"
`

var (
	finalAcc     = regexp.MustCompile(`final test:\s+loss (\S+)\s+accuracy (\S+)`)
	compressLine = regexp.MustCompile(`compress: \S+: worker 0 sent (\d+) bytes per compressed iteration \((\d+) iterations\), (\d+) per plain float32 iteration \((\d+)\)`)
)

// TestCompressTrains trains the small net with 4 in-process workers
// uncompressed and with each lossy compressor: the final accuracy stays
// close to the uncompressed run's, and the bytes a worker sends per
// compressed iteration shrink by the factor the compressor's payload
// predicts (PowerSGD rank 2: 862 of 17,098 values in allreduces; top-k
// 10%: 3,422 values, sent by an allgather to 3 peers instead of an
// allreduce's 2·3/4 of the buffer).
func TestCompressTrains(t *testing.T) {
	if testing.Short() {
		t.Skip("trains five runs")
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", compressNet)
	write(t, dir, "solver.prototxt", compressSolver)
	// sign's scaled signs with error feedback diverge at base_lr 0.05
	// with momentum 0.9 on this net; it is compared at 0.01.
	write(t, dir, "slow.prototxt", strings.Replace(compressSolver, "base_lr: 0.05", "base_lr: 0.01", 1))
	train := func(solver, scheme, c string) (acc float64, out string) {
		t.Helper()
		code, out, errs := runCmd(t, dir, "train", "--solver", solver, "--scheme", scheme, "--workers", "4",
			"--threads", "2", "--reduce", "fast", "--compress", c)
		if code != 0 {
			t.Fatalf("%s --compress %s: exit %d\n%s\n%s", scheme, c, code, out, errs)
		}
		m := finalAcc.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s --compress %s: no final test line:\n%s", scheme, c, out)
		}
		acc, _ = strconv.ParseFloat(m[2], 64)
		return acc, out
	}
	base := map[string]float64{}
	for _, sv := range []string{"solver.prototxt", "slow.prototxt"} {
		base[sv], _ = train(sv, "sync-ring", "none")
	}
	for _, tc := range []struct {
		scheme, compress string
		ratio, tol       float64 // plain bytes / compressed bytes per iteration, relative tolerance
		accTol           float64
		header           string
	}{
		{"sync-ring", "powersgd:2", 17098.0 / 862, 0.1, 0.05, "hands the collectives 862 values per iteration instead of 17098 float32 gradients (19.8x fewer)"},
		{"sync-tree", "powersgd:2", 17098.0 / 862, 0.15, 0.05, "862 values"},
		{"overlap", "powersgd:2", 17098.0 / 862, 0.15, 0.05, "862 values"},
		{"local-sgd", "powersgd:2", 17098.0 / 862, 0.1, 0.05, "862 values"}, // H = 1: averages gradients
		{"sync-ring", "topk:0.1", (2 * 3.0 / 4 * 17098) / (3 * 3422), 0.1, 0.05, "3422 values"},
		{"sync-ring", "sign", (2 * 3.0 / 4 * 17098) / (3 * 539), 0.1, 0.05, "539 values"},
		{"sync-ring", "bf16", 1, 0.01, 0.02, "bf16 values still travel as float32"},
	} {
		t.Run(tc.scheme+" "+tc.compress, func(t *testing.T) {
			sv := "solver.prototxt"
			if tc.compress == "sign" {
				sv = "slow.prototxt"
			}
			acc, out := train(sv, tc.scheme, tc.compress)
			if acc < base[sv]-tc.accTol {
				t.Errorf("accuracy %.4f, uncompressed %.4f", acc, base[sv])
			}
			if !strings.Contains(out, tc.header) || !strings.Contains(out, "after 12 plain iterations (--compress-warmup)") {
				t.Errorf("header lacks %q and the warm-up of 12:\n%s", tc.header, out)
			}
			m := compressLine.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no compress summary:\n%s", out)
			}
			cb, _ := strconv.ParseFloat(m[1], 64)
			pb, _ := strconv.ParseFloat(m[3], 64)
			if m[2] != "108" || m[4] != "12" {
				t.Errorf("compressed/plain iterations %s/%s, want 108/12", m[2], m[4])
			}
			if got := pb / cb; got < tc.ratio*(1-tc.tol) || got > tc.ratio*(1+tc.tol) {
				t.Errorf("plain/compressed bytes %.0f/%.0f = %.2f, want %.2f ± %.0f%%", pb, cb, got, tc.ratio, 100*tc.tol)
			}
		})
	}
}

// TestCompressSyncPS: sync-ps's workers push their gradients to the
// server compressed (bf16 packed two to a word, top-k's pairs, sign's
// words) and the server decodes them: the accuracy stays near the plain
// run's and each push shrinks by its encoding's factor.
func TestCompressSyncPS(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four runs")
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", compressNet)
	write(t, dir, "solver.prototxt", strings.Replace(compressSolver, "base_lr: 0.05", "base_lr: 0.01", 1))
	train := func(c string) (float64, string) {
		t.Helper()
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", "sync-ps", "--workers", "3",
			"--threads", "2", "--reduce", "fast", "--compress", c)
		if code != 0 {
			t.Fatalf("--compress %s: exit %d\n%s\n%s", c, code, out, errs)
		}
		m := finalAcc.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("--compress %s: no final test line:\n%s", c, out)
		}
		acc, _ := strconv.ParseFloat(m[2], 64)
		return acc, out
	}
	base, _ := train("none")
	for _, tc := range []struct {
		compress string
		values   int // floats per compressed push
	}{
		{"bf16", 17098 / 2},
		{"topk:0.1", 3422},
		{"sign", 539},
	} {
		acc, out := train(tc.compress)
		if acc < base-0.03 {
			t.Errorf("%s: accuracy %.4f, uncompressed %.4f", tc.compress, acc, base)
		}
		if want := "each worker pushes " + strconv.Itoa(tc.values) + " values per iteration to the server instead of 17098"; !strings.Contains(out, want) {
			t.Errorf("%s: header lacks %q:\n%s", tc.compress, want, out)
		}
		m := compressLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no compress summary:\n%s", tc.compress, out)
		}
		cb, _ := strconv.ParseFloat(m[1], 64)
		pb, _ := strconv.ParseFloat(m[3], 64)
		if cb != float64(4*tc.values) || pb != 4*17098 {
			t.Errorf("%s: %0.f bytes per compressed push, %.0f per plain; want %d, %d", tc.compress, cb, pb, 4*tc.values, 4*17098)
		}
	}
}

// TestCompressRefused: combinations a compressor cannot serve are
// refused before training, naming both flags.
func TestCompressRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--scheme", "async", "--compress", "powersgd:2"}, []string{"--compress powersgd:2", "--scheme async"}},
		{[]string{"--scheme", "easgd", "--compress", "topk:0.1"}, []string{"--compress topk:0.1", "--scheme easgd"}},
		{[]string{"--scheme", "sync-easgd", "--compress", "bf16"}, []string{"--compress bf16", "--scheme sync-easgd"}},
		{[]string{"--scheme", "diloco", "--compress", "powersgd:1"}, []string{"--compress powersgd:1", "--scheme diloco"}},
		{[]string{"--scheme", "local-sgd", "--interval", "4", "--compress", "topk:0.5"}, []string{"--compress topk:0.5", "--scheme local-sgd --interval 4"}},
		{[]string{"--scheme", "sync-ps", "--compress", "powersgd:2"}, []string{"--compress powersgd:2", "--scheme sync-ps", "two rounds"}},
		{[]string{"--scheme", "sync-ring", "--reduce", "exact", "--compress", "powersgd:2"}, []string{"--reduce exact", "--compress powersgd:2"}},
		{[]string{"--scheme", "sync-ring", "--compress", "powersgd:0"}, []string{"--compress", "rank R ≥ 1"}},
		{[]string{"--scheme", "sync-ring", "--compress", "topk:0"}, []string{"--compress", "fraction F in (0, 1]"}},
		{[]string{"--scheme", "sync-ring", "--compress", "topk:1.5"}, []string{"--compress", "fraction F in (0, 1]"}},
		// The tiny net's matrices are 16×64 and 4×16: rank 13 fits neither.
		{[]string{"--scheme", "sync-ring", "--compress", "powersgd:13"}, []string{"--compress powersgd:13", "--solver solver.prototxt", "lower R below 13"}},
		{[]string{"--scheme", "sync-ring", "--compress", "topk:0.5"}, []string{"--compress topk:0.5", "--solver solver.prototxt", "nothing to compress"}},
		{[]string{"--scheme", "sync-ring", "--workers", "1", "--compress", "bf16"}, []string{"--compress bf16", "--workers 1"}},
		{[]string{"--scheme", "sync-ring", "--compress", "fp16"}, []string{"--compress", "fp16", "--transport tcp"}},
		{[]string{"--scheme", "sync-ring", "--compress", "none", "--compress-warmup", "5"}, []string{"--compress-warmup 5", "--compress none"}},
		{[]string{"--scheme", "sync-ring", "--compress", "bf16", "--compress-warmup", "-3"}, []string{"--compress-warmup -3"}},
	} {
		expectRefusal(t, dir, append([]string{"train", "--solver", "solver.prototxt", "--workers", "2", "--threads", "1"}, tc.args...), tc.want...)
	}
}

// expectRefusal runs dsgd args in dir and fails the test unless it exits
// non-zero, before training, with an error naming each of want.
func expectRefusal(t *testing.T, dir string, args []string, want ...string) {
	t.Helper()
	code, out, errs := runCmd(t, dir, args...)
	if code == 0 {
		t.Errorf("%v: exit 0, want a refusal\n%s", args, out)
		return
	}
	for _, w := range want {
		if !strings.Contains(errs, w) {
			t.Errorf("%v: the error does not name %q:\n%s", args, w, errs)
		}
	}
	if strings.Contains(out, "iter ") {
		t.Errorf("%v: trained before refusing:\n%s", args, out)
	}
}

// TestCompressOverTCP: the same compressor layer runs in worker
// processes over the tcp transport; with shared memory off its bytes are
// the transport's count (with it on, the host group's allreduce bypasses
// that count, and the summary says so).
func TestCompressOverTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", compressNet)
	write(t, dir, "solver.prototxt", strings.Replace(compressSolver, "max_iter: 120", "max_iter: 40", 1))
	for _, tc := range []struct {
		compress, shm string
		ratio         float64 // plain / compressed bytes per iteration; 0: not counted
	}{
		{"powersgd:2", "off", 17098.0 / 862},
		{"sign", "off", (2 * 1.0 / 2 * 17098) / (1 * 539)}, // 2 workers: an allgather sends one part
		{"powersgd:2", "on", 0},
	} {
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--scheme", "sync-ring", "--workers", "2",
			"--threads", "1", "--transport", "tcp", "--shm", tc.shm, "--compress", tc.compress, "--compress-warmup", "4")
		if code != 0 {
			t.Fatalf("%s --shm %s: exit %d\n%s\n%s", tc.compress, tc.shm, code, out, errs)
		}
		if tc.ratio == 0 {
			if !strings.Contains(out, "over shared memory or MPI's own collectives: the bytes are not counted") {
				t.Errorf("%s --shm on: the summary does not say the bytes went uncounted:\n%s", tc.compress, out)
			}
			continue
		}
		m := compressLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no compress summary:\n%s", tc.compress, out)
		}
		cb, _ := strconv.ParseFloat(m[1], 64)
		pb, _ := strconv.ParseFloat(m[3], 64)
		if m[2] != "36" || m[4] != "4" {
			t.Errorf("%s: compressed/plain iterations %s/%s, want 36/4", tc.compress, m[2], m[4])
		}
		if got := pb / cb; got < tc.ratio*0.9 || got > tc.ratio*1.1 {
			t.Errorf("%s: plain/compressed bytes %.0f/%.0f = %.2f, want %.2f ± 10%%", tc.compress, pb, cb, got, tc.ratio)
		}
	}
}

// TestCompressOverMPI: the compressor runs the same way in ranks that
// mpirun started, over dsgd's schedules and over MPI's own allreduce.
func TestCompressOverMPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mpirun")
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", compressNet)
	write(t, dir, "solver.prototxt", strings.Replace(compressSolver, "max_iter: 120", "max_iter: 40", 1))
	for _, tc := range []struct {
		compress string
		extra    []string
		ratio    float64
	}{
		{"powersgd:2", nil, 17098.0 / 862},
		{"topk:0.1", nil, 17098.0 / 3422}, // 2 workers: an allgather sends one part
		{"powersgd:2", []string{"--allreduce", "mpi"}, 0},
	} {
		args := append([]string{"worker", "--transport", "mpi", "--solver", "solver.prototxt", "--threads", "1", "--scheme", "sync-ring",
			"--reduce", "fast", "--compress", tc.compress, "--compress-warmup", "4", "--snapshot-prefix", "none"}, tc.extra...)
		code, out := mpirunDsgd(t, dir, 2, args...)
		if code != 0 {
			t.Fatalf("%s: mpirun exit %d\n%s", tc.compress, code, out)
		}
		if tc.ratio == 0 {
			// MPI_Allreduce moves the bytes outside the endpoint's count.
			if !strings.Contains(out, "over shared memory or MPI's own collectives: the bytes are not counted") {
				t.Errorf("%s %v: the summary does not say the bytes went uncounted:\n%s", tc.compress, tc.extra, out)
			}
			continue
		}
		m := compressLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no compress summary:\n%s", tc.compress, out)
		}
		cb, _ := strconv.ParseFloat(m[1], 64)
		pb, _ := strconv.ParseFloat(m[3], 64)
		if got := pb / cb; got < tc.ratio*0.9 || got > tc.ratio*1.1 {
			t.Errorf("%s %v: plain/compressed bytes %.0f/%.0f = %.2f, want %.2f ± 10%%", tc.compress, tc.extra, pb, cb, got, tc.ratio)
		}
	}
}
