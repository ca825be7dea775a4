package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// metricsRecord is a --metrics JSON line of either kind.
type metricsRecord struct {
	Kind    string
	Rank    int
	Iter    int
	LR      float64
	Loss    float64
	Images  int64
	Epoch   float64
	Net     int
	Outputs map[string]float64
}

func readRecords(t *testing.T, path string) []metricsRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []metricsRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r metricsRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// kinds summarises records as "train 0-9 test 10 ...": each run of
// consecutive train iterations, and each test pass.
func kinds(recs []metricsRecord) string {
	var parts []string
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if r.Kind != "train" {
			parts = append(parts, r.Kind+" "+strconv.Itoa(r.Iter))
			continue
		}
		j := i
		for j+1 < len(recs) && recs[j+1].Kind == "train" && recs[j+1].Iter == recs[j].Iter+1 {
			j++
		}
		parts = append(parts, "train "+strconv.Itoa(r.Iter)+"-"+strconv.Itoa(recs[j].Iter))
		i = j
	}
	return strings.Join(parts, " ")
}

// TestMetricsFileResume: a fresh run truncates the --metrics file, a
// resumed one appends to it (JSON lines, and CSV with its header once);
// a CSV file whose header is not the run's is refused.
func TestMetricsFileResume(t *testing.T) {
	for _, tc := range []struct{ name, file string }{{"json", "m.jsonl"}, {"csv", "m.csv"}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "net.prototxt", tinyNet)
			write(t, dir, "solver.prototxt", tinySolver)
			train := func(args ...string) {
				t.Helper()
				args = append([]string{"train", "--solver", "solver.prototxt", "--threads", "1", "--metrics", tc.file, "--test-interval", "0"}, args...)
				if code, out, errs := runCmd(t, dir, args...); code != 0 {
					t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
				}
			}
			read := func() []metricsRecord {
				if tc.name == "json" {
					return readRecords(t, filepath.Join(dir, tc.file))
				}
				f, err := os.Open(filepath.Join(dir, tc.file))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				rows, err := csv.NewReader(f).ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				var recs []metricsRecord
				for i, r := range rows {
					if r[0] == "kind" {
						if i != 0 {
							t.Fatalf("a second header at row %d", i)
						}
						continue
					}
					it, _ := strconv.Atoi(r[3])
					recs = append(recs, metricsRecord{Kind: r[0], Iter: it})
				}
				return recs
			}
			train("--iters", "10")
			if got, want := kinds(read()), "train 0-9 test 10"; got != want {
				t.Fatalf("first run: %s, want %s", got, want)
			}
			train("--iters", "20", "--resume", "out/tiny_iter_10.dsgdsnap")
			if got, want := kinds(read()), "train 0-9 test 10 train 10-19 test 20"; got != want {
				t.Fatalf("resumed: %s, want %s", got, want)
			}
			train("--iters", "5", "--snapshot-prefix", "none")
			if got, want := kinds(read()), "train 0-4 test 5"; got != want {
				t.Fatalf("fresh run: %s, want %s", got, want)
			}
			if tc.name == "csv" {
				b, _ := os.ReadFile(filepath.Join(dir, tc.file))
				write(t, dir, tc.file, strings.Replace(string(b), "test_accuracy", "test_top5", 1))
				code, _, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--metrics", tc.file, "--iters", "20", "--resume", "out/tiny_iter_10.dsgdsnap")
				if code == 0 || !strings.Contains(errs, "--metrics m.csv: the file's CSV header is not this run's") {
					t.Fatalf("a foreign header: exit %d: %s", code, errs)
				}
			}
		})
	}
}

// TestMetricsLogBadPaths: a --metrics or --log path that cannot be
// written is refused before training, naming the flag.
func TestMetricsLogBadPaths(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	write(t, dir, "solver.prototxt", tinySolver)
	for _, tc := range []struct{ flag, path string }{
		{"--metrics", "missing/m.jsonl"},
		{"--metrics", "missing/m.csv"},
		{"--log", "missing/caffe.log"},
		{"--log", "."},
	} {
		code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--threads", "1", "--snapshot-prefix", "none", tc.flag, tc.path)
		if code == 0 || !strings.Contains(errs, tc.flag+": ") || strings.Contains(out, "iter ") {
			t.Errorf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", tc.flag, tc.path, code, out, errs)
		}
	}
}

// TestLogParsedByCaffeTools runs Caffe's own tools/extra/parse_log.py on
// a --log file and checks its tables against the run's --metrics
// records and printed tests: the train table has an row per displayed
// iteration with its loss and, as parse_log.py reads a Caffe log, the
// rate last printed before it; the test table every test pass's
// accuracy and loss.
func TestLogParsedByCaffeTools(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("Caffe's parse_log.py needs %s: %v", python, err)
	}
	dir := t.TempDir()
	write(t, dir, "net.prototxt", tinyNet)
	// A rate that steps down, so that the LearningRate column says
	// something.
	write(t, dir, "solver.prototxt", strings.Replace(tinySolver, `lr_policy: "fixed"`, `lr_policy: "step" gamma: 0.5 stepsize: 5`, 1))
	tools := filepath.Join(dir, "tools")
	os.Mkdir(tools, 0o755)
	for _, name := range []string{"parse_log.py", "extract_seconds.py"} {
		b, err := os.ReadFile(filepath.Join("testdata", "caffe_tools", name))
		if err != nil {
			t.Fatal(err)
		}
		// parse_log.py's one Python 2 statement (see the README there).
		src := strings.Replace(string(b), "print 'Wrote %s' % output_filename", "print('Wrote %s' % output_filename)", 1)
		write(t, tools, name, src)
	}
	// 16 iterations, then 8 more resumed from the snapshot, which
	// append to the log and the metrics file.
	var out string
	for _, args := range [][]string{{"--iters", "16"}, {"--iters", "24", "--resume", "out/tiny_iter_16.dsgdsnap"}} {
		args = append([]string{"train", "--solver", "solver.prototxt", "--threads", "1", "--display", "4", "--test-interval", "8", "--log", "caffe.log", "--metrics", "m.jsonl"}, args...)
		code, o, errs := runCmd(t, dir, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, o, errs)
		}
		out += o
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "caffe.log")); strings.Count(string(b), "] Solving tiny\n") != 2 || !strings.Contains(string(b), "] Restoring previous solver status from out/tiny_iter_16.dsgdsnap\n") {
		t.Errorf("the resumed run did not append to the log:\n%s", b)
	}
	cmd := exec.Command(python, filepath.Join(tools, "parse_log.py"), "caffe.log", ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("parse_log.py: %v\n%s", err, b)
	}
	table := func(name string) (map[string]int, [][]float64) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil || len(rows) < 2 {
			t.Fatalf("%s: %d rows, %v", name, len(rows), err)
		}
		col := map[string]int{}
		for i, c := range rows[0] {
			col[c] = i
		}
		var vals [][]float64
		for _, r := range rows[1:] {
			var v []float64
			for _, s := range r {
				x, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatalf("%s: %q: %v", name, s, err)
				}
				v = append(v, x)
			}
			vals = append(vals, v)
		}
		return col, vals
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*math.Max(math.Abs(a), math.Abs(b)) }
	train := map[int]metricsRecord{}
	var tests []metricsRecord
	for _, r := range readRecords(t, filepath.Join(dir, "m.jsonl")) {
		if r.Kind == "train" {
			train[r.Iter] = r
		} else {
			tests = append(tests, r)
		}
	}

	col, rows := table("caffe.log.train")
	if len(rows) != 6 {
		t.Fatalf("train table: %d rows, want 6 (iterations 0, 4, ..., 20): %v", len(rows), rows)
	}
	for i, r := range rows {
		it := 4 * i
		rate := train[max(it-4, 0)].LR // the rate printed at the display before
		if i == 0 {
			rate = train[0].LR // parse_log.py copies the second row's
		}
		if int(r[col["NumIters"]]) != it || !near(r[col["loss"]], train[it].Loss) || !near(r[col["LearningRate"]], rate) {
			t.Errorf("train row %d: iteration %v, loss %v, lr %v; want %d, %v, %v", i, r[col["NumIters"]], r[col["loss"]], r[col["LearningRate"]], it, train[it].Loss, rate)
		}
	}
	if train[20].LR != 0.00625 || train[4].LR != 0.1 {
		t.Errorf("the step policy's rates: %v at 4, %v at 20", train[4].LR, train[20].LR)
	}

	col, rows = table("caffe.log.test")
	printed := regexp.MustCompile(`(?:iter \d+ test|final test):  loss ([0-9.]+)  accuracy ([0-9.]+)`).FindAllStringSubmatch(out, -1)
	if len(rows) != 4 || len(tests) != 4 || len(printed) != 4 {
		t.Fatalf("test table %d rows, metrics %d test records, %d printed; want 4 (iterations 0, 8, 16 at the first run's end, 24)\n%s", len(rows), len(tests), len(printed), out)
	}
	for i, r := range rows {
		rec := tests[i]
		p := printed[i][1:]
		acc, _ := strconv.ParseFloat(p[1], 64)
		if int(r[col["NumIters"]]) != 8*i || rec.Iter != 8*i || !near(r[col["accuracy"]], rec.Outputs["accuracy"]) || !near(r[col["loss"]], rec.Outputs["loss"]) ||
			math.Abs(r[col["accuracy"]]-acc) > 5e-5 || p[0] != strconv.FormatFloat(rec.Outputs["loss"], 'f', 4, 64) {
			t.Errorf("test row %d: %v (columns %v); the metrics say %+v, the run printed %v", i, r, col, rec, printed[i])
		}
	}
}

// TestLogOverTCP: in a multi-process run only rank 0 writes --log (not
// the other ranks, nor a parameter server given the same flags), and
// each process its own --metrics CSV with its own header.
func TestLogOverTCP(t *testing.T) {
	for _, sch := range []string{"sync-tree", "async"} {
		t.Run(sch, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "net.prototxt", tinyNet)
			write(t, dir, "solver.prototxt", tinySolver)
			code, out, errs := runCmd(t, dir, "train", "--solver", "solver.prototxt", "--transport", "tcp", "--workers", "2", "--scheme", sch,
				"--iters", "20", "--threads", "1", "--snapshot-prefix", "none", "--log", "caffe.log", "--metrics", "m.csv")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			b, err := os.ReadFile(filepath.Join(dir, "caffe.log"))
			if err != nil {
				t.Fatal(err)
			}
			log := string(b)
			for _, want := range []struct {
				text string
				n    int
			}{{"] Solving tiny\n", 1}, {"] Optimization Done.\n", 1}, {", lr = 0.1\n", 2}, {", Testing net (#0)\n", 2}} {
				if got := strings.Count(log, want.text); got != want.n {
					t.Errorf("%q %d times, want %d:\n%s", want.text, got, want.n, log)
				}
			}
			for file, header := range map[string]string{
				"m.csv":       "kind,time,rank,iter,epoch,images,lr,loss,data_ms,forward_ms,backward_ms,comm_exposed_ms,comm_busy_ms,update_ms,wait_ms,wall_ms,net,test_loss,test_accuracy\n",
				"m.csv.rank1": "kind,time,rank,iter,epoch,images,lr,loss,data_ms,forward_ms,backward_ms,comm_exposed_ms,comm_busy_ms,update_ms,wait_ms,wall_ms,net\n",
			} {
				b, err := os.ReadFile(filepath.Join(dir, file))
				if err != nil || !strings.HasPrefix(string(b), header) || strings.Count(string(b), "\ntrain,") != 20 {
					t.Errorf("%s (%v):\n%s", file, err, b)
				}
			}
		})
	}
}
