package train

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dsgd/data"
	"dsgd/engine/solver"
)

// reportConfig is a 12-iteration run that tests at 0, 4, 8 and 12 with
// two test nets, displays every 4 iterations and steps its learning rate
// down every 5.
func reportConfig(t *testing.T) Config {
	cfg := testConfig(t, 12)
	cfg.TestInterval, cfg.TestIter, cfg.TestInitialization, cfg.Display = 4, 2, true, 4
	cfg.Solver = solver.Config{Type: "SGD", BaseLR: 0.05, Momentum: 0.9, LRPolicy: "step", Gamma: 0.5, StepSize: 5}
	cfg.TrainSetSize = 512
	ds, err := data.Synthetic(data.SyntheticConfig{N: 64, C: 1, H: 8, W: 8, Classes: 4, Seed: 9, Split: data.Test})
	if err != nil {
		t.Fatal(err)
	}
	l, err := data.NewLoader(ds, data.LoaderConfig{BatchSize: 16, Transform: data.TransformConfig{Scale: 1.0 / 256}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cfg.ExtraTests = []TestNet{{Spec: mlp(true), Shapes: cfg.TestShapes, Feeds: []Feed{{Tops: []string{"data", "label"}, Source: Loader{L: l, Name: "test2"}}}, Iter: 1}}
	return cfg
}

// TestMetricsRecords: the metrics file holds a train record per
// iteration (time, lr, images, epoch) and a test record per test net per
// pass, with the figures the run reports, as JSON lines or as CSV.
func TestMetricsRecords(t *testing.T) {
	for _, tc := range []struct {
		name     string
		format   MetricsFormat
		noHeader bool
	}{
		{"json", MetricsJSON, false},
		{"csv", MetricsCSV, false},
		{"csv appended", MetricsCSV, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := reportConfig(t)
			var buf bytes.Buffer
			cfg.Metrics, cfg.MetricsFormat, cfg.MetricsNoHeader = &buf, tc.format, tc.noHeader
			var tests []TestResult
			onTest := func(tr TestResult) { tests = append(tests, tr) }
			tr, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			begin := time.Now().UTC().Add(-time.Millisecond)
			res, err := tr.Run(context.Background(), Deps{OnTest: onTest})
			if err != nil {
				t.Fatal(err)
			}
			if len(tests) != len(res.Tests) || len(tests) != 4 {
				t.Fatalf("OnTest saw %d passes, the result has %d, want 4", len(tests), len(res.Tests))
			}
			var trains []IterMetrics
			var testRecs []TestMetrics
			switch tc.format {
			case MetricsJSON:
				for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
					var kind struct{ Kind string }
					if err := json.Unmarshal([]byte(line), &kind); err != nil {
						t.Fatalf("%q: %v", line, err)
					}
					switch kind.Kind {
					case "train":
						var m IterMetrics
						json.Unmarshal([]byte(line), &m)
						trains = append(trains, m)
					case "test":
						var m TestMetrics
						json.Unmarshal([]byte(line), &m)
						testRecs = append(testRecs, m)
					default:
						t.Fatalf("record of kind %q: %s", kind.Kind, line)
					}
					if !regexp.MustCompile(`"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z"`).MatchString(line) {
						t.Errorf("time not RFC 3339 UTC with sub-seconds: %s", line)
					}
				}
			case MetricsCSV:
				rows, err := csv.NewReader(&buf).ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				cols := tr.MetricsColumns()
				if want := "kind,time,rank,iter,epoch,images,lr,loss,data_ms,forward_ms,backward_ms,comm_exposed_ms,comm_busy_ms,update_ms,wait_ms,wall_ms,net,test_loss,test_accuracy"; strings.Join(cols, ",") != want {
					t.Fatalf("columns %v, want %s", cols, want)
				}
				if !tc.noHeader {
					if strings.Join(rows[0], ",") != strings.Join(cols, ",") {
						t.Fatalf("header %v, want %v", rows[0], cols)
					}
					rows = rows[1:]
				}
				for _, r := range rows {
					get := func(i int) float64 {
						if r[i] == "" {
							return 0
						}
						v, err := strconv.ParseFloat(r[i], 64)
						if err != nil {
							t.Fatalf("column %s of %v: %v", cols[i], r, err)
						}
						return v
					}
					at, err := time.Parse(time.RFC3339Nano, r[1])
					if err != nil {
						t.Fatalf("time %q: %v", r[1], err)
					}
					switch r[0] {
					case "train":
						trains = append(trains, IterMetrics{Kind: r[0], Time: at, Rank: int(get(2)), Iter: int(get(3)), Epoch: get(4), Images: int64(get(5)), LR: get(6), Loss: get(7), ForwardMS: get(9)})
					case "test":
						m := TestMetrics{Kind: r[0], Time: at, Iter: int(get(3)), Epoch: get(4), Images: int64(get(5)), LR: get(6), Net: int(get(16)), Outputs: map[string]float64{}}
						for i := 17; i < len(cols); i++ {
							if r[i] != "" {
								m.Outputs[strings.TrimPrefix(cols[i], "test_")] = get(i)
							}
						}
						testRecs = append(testRecs, m)
					default:
						t.Fatalf("row of kind %q: %v", r[0], r)
					}
				}
			}
			if len(trains) != 12 {
				t.Fatalf("%d train records, want 12", len(trains))
			}
			sv, _ := solver.New(cfg.Solver, 1, nil)
			last := begin
			for i, m := range trains {
				images := int64(16 * (i + 1))
				if m.Iter != i || m.Rank != 0 || m.Images != images || m.Epoch != float64(images)/512 || m.LR != sv.LR(i) || !(m.Loss > 0) || !(m.ForwardMS > 0) {
					t.Errorf("train record %d: %+v (want images %d, lr %v)", i, m, images, sv.LR(i))
				}
				if m.Time.Before(last) || m.Time.Location() != time.UTC {
					t.Errorf("train record %d at %v, after %v", i, m.Time, last)
				}
				last = m.Time
			}
			if len(testRecs) != 8 {
				t.Fatalf("%d test records, want 8 (4 passes of 2 nets): %+v", len(testRecs), testRecs)
			}
			for i, m := range testRecs {
				pass := res.Tests[i/2]
				if m.Iter != pass.Iter || m.Net != i%2 || m.Images != int64(16*pass.Iter) || m.LR != sv.LR(max(pass.Iter-1, 0)) {
					t.Errorf("test record %d: %+v, for the pass %v", i, m, pass)
				}
				for _, o := range pass.Outputs {
					if o.Net != m.Net {
						continue
					}
					if v, ok := m.Outputs[o.Output()]; !ok || v != o.Value {
						t.Errorf("test record %d: %s = %v (present %v), the pass says %v", i, o.Output(), v, ok, o.Value)
					}
				}
				if len(m.Outputs) != 2 {
					t.Errorf("test record %d has outputs %v, want loss and accuracy", i, m.Outputs)
				}
			}
		})
	}
}

// TestCaffeLog: the Caffe-shaped log has Caffe's lines, in Caffe's order
// and numbering: Solving, the tests before the iteration they follow,
// the display of iterations 0, 4, 8 (from 0, before the update) with
// the train net's outputs and the update's rate, Optimization Done. The
// train net's outputs are the iteration's, the mean over its passes
// (iter_size batches, or --reduce exact's atoms), as the loss is.
func TestCaffeLog(t *testing.T) {
	for _, tc := range []struct {
		name     string
		iterSize int
		exact    bool
	}{{"one pass", 1, false}, {"iter_size 3", 3, false}, {"exact, 4 atoms", 4, true}} {
		t.Run(tc.name, func(t *testing.T) { testCaffeLog(t, tc.iterSize, tc.exact) })
	}
}

func testCaffeLog(t *testing.T, iterSize int, exact bool) {
	cfg := reportConfig(t)
	cfg.IterSize, cfg.Exact = iterSize, exact
	var log bytes.Buffer
	cfg.CaffeLog = &log
	var losses []float64
	onIter := func(_ int, loss float64, _ time.Duration) { losses = append(losses, loss) }
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), Deps{OnIter: onIter})
	if err != nil {
		t.Fatal(err)
	}
	prefix := regexp.MustCompile(`^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ (solver|sgd_solver)\.cpp:\d+\] `)
	var msgs []string
	for _, line := range strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n") {
		if !prefix.MatchString(line) {
			t.Fatalf("not a glog line: %q", line)
		}
		msgs = append(msgs, prefix.ReplaceAllString(line, ""))
	}
	sv, _ := solver.New(cfg.Solver, 1, nil)
	var want []string
	num := regexp.MustCompile(`[-+0-9.e]+`)
	test := func(i int) {
		for net := 0; net < 2; net++ {
			want = append(want, "Iteration "+strconv.Itoa(res.Tests[i].Iter)+", Testing net (#"+strconv.Itoa(net)+")")
			k := 0
			for _, o := range res.Tests[i].Outputs {
				if o.Net == net {
					line := "    Test net output #" + strconv.Itoa(k) + ": " + o.Output() + " = " + caffeFloat(o.Value)
					if o.Output() == "loss" {
						line += " (* 1 = " + caffeFloat(o.Value) + " loss)"
					}
					want = append(want, line)
					k++
				}
			}
		}
	}
	want = append(want, "Solving mlp", "Learning Rate Policy: step")
	for i, it := range []int{0, 4, 8} {
		test(i)
		l := caffeFloat(losses[it])
		want = append(want, "Iteration "+strconv.Itoa(it)+" (X iter/s, Xs/4 iters), loss = "+caffeFloat(losses[it]),
			"    Train net output #0: loss = "+l+" (* 1 = "+l+" loss)",
			"Iteration "+strconv.Itoa(it)+", lr = "+caffeFloat(sv.LR(it)))
	}
	test(3)
	want = append(want, "Optimization Done.")
	for i := range max(len(msgs), len(want)) {
		got, w := "", ""
		if i < len(msgs) {
			got = msgs[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if strings.Contains(w, "(X iter/s") {
			got = regexp.MustCompile(`\(\S+ iter/s, \S+s/`).ReplaceAllString(got, "(X iter/s, Xs/")
		}
		if got != w && num.ReplaceAllString(got, "N") != num.ReplaceAllString(w, "N") {
			t.Errorf("line %d: %q, want %q", i, got, w)
		} else if got != w && !close6(got, w) {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
}

// close6 reports whether a and b differ only in numbers equal to six
// significant digits (a train output is the float32 loss, the loss the
// float64 mean).
func close6(a, b string) bool {
	num := regexp.MustCompile(`[-+]?[0-9]*\.?[0-9]+(e[-+]?[0-9]+)?`)
	na, nb := num.FindAllString(a, -1), num.FindAllString(b, -1)
	if len(na) != len(nb) {
		return false
	}
	for i := range na {
		x, _ := strconv.ParseFloat(na[i], 64)
		y, _ := strconv.ParseFloat(nb[i], 64)
		if math.Abs(x-y) > 1e-5*math.Max(math.Abs(x), math.Abs(y)) {
			return false
		}
	}
	return true
}
