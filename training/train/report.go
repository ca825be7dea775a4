package train

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"dsgd/engine/model"
)

// The columns of a CSV metrics file before the test outputs' (see
// MetricsColumns).
var metricsFixedColumns = []string{"kind", "time", "rank", "iter", "epoch", "images", "lr", "loss",
	"data_ms", "forward_ms", "backward_ms", "comm_exposed_ms", "comm_busy_ms", "update_ms", "wait_ms", "wall_ms", "net"}

// testColumnPrefix begins the CSV column of a test output, so that a
// test net's "loss" is not the train records' loss column.
const testColumnPrefix = "test_"

// MetricsColumns are the columns of a CSV metrics file (Config.Metrics
// with MetricsCSV): kind, time, rank, iter, epoch, images, lr, loss, the
// phase times, net, then test_NAME for each scalar output NAME of the
// test nets (their union, in order).
func (t *Trainer) MetricsColumns() []string {
	return append(append([]string(nil), metricsFixedColumns...), t.testColumns()...)
}

// testColumns are the CSV columns of the test nets' scalar outputs, or
// under Config.Detection of all their outputs (each one's mAP).
func (t *Trainer) testColumns() []string {
	var cols []string
	seen := map[string]bool{}
	if t.test == nil {
		return nil
	}
	for _, net := range append([]*model.Net{t.test}, t.extra...) {
		for _, o := range net.Outputs() {
			// Under eval_type detection every output is a DetectionEvaluate
			// top, reported as its mAP (the per-class APs go to JSON only).
			if c := testColumnPrefix + o.Name; (o.Count() == 1 || t.cfg.Detection != nil) && !seen[c] {
				seen[c] = true
				cols = append(cols, c)
			}
		}
	}
	return cols
}

// metricsSink writes the records of Config.Metrics, one at a time.
type metricsSink struct {
	mu   sync.Mutex
	w    io.Writer
	csv  *csv.Writer // nil for JSON lines
	cols []string    // the CSV columns
}

func newMetricsSink(t *Trainer) *metricsSink {
	s := &metricsSink{w: t.cfg.Metrics}
	if t.cfg.MetricsFormat == MetricsCSV {
		s.csv = csv.NewWriter(t.cfg.Metrics)
		s.cols = t.MetricsColumns()
	}
	return s
}

// header writes the CSV header line.
func (s *metricsSink) header() error {
	if s.csv == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeRow(s.cols)
}

func (s *metricsSink) writeRow(row []string) error {
	s.csv.Write(row)
	s.csv.Flush()
	if err := s.csv.Error(); err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	return nil
}

// formatFloat writes v in the shortest form that reads back the same.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// metricsTime is a record's time: UTC, to the microsecond.
func metricsTime(t time.Time) time.Time { return t.UTC().Round(time.Microsecond) }

// csvTime is a record's time in a CSV row: RFC 3339 with microseconds.
func csvTime(t time.Time) string { return t.Format("2006-01-02T15:04:05.000000Z07:00") }

// train writes an iteration's record.
func (s *metricsSink) train(m IterMetrics) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.csv == nil {
		return s.json(m)
	}
	row := make([]string, len(s.cols))
	epoch := ""
	if m.Epoch > 0 {
		epoch = formatFloat(m.Epoch)
	}
	copy(row, []string{m.Kind, csvTime(m.Time), strconv.Itoa(m.Rank), strconv.Itoa(m.Iter), epoch, strconv.FormatInt(m.Images, 10),
		formatFloat(m.LR), formatFloat(m.Loss), formatFloat(m.DataMS), formatFloat(m.ForwardMS), formatFloat(m.BackMS),
		formatFloat(m.CommMS), formatFloat(m.CommBusy), formatFloat(m.UpdateMS), formatFloat(m.WaitMS), formatFloat(m.WallMS), ""})
	return s.writeRow(row)
}

// test writes a test net's record.
func (s *metricsSink) test(m TestMetrics) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.csv == nil {
		return s.json(m)
	}
	row := make([]string, len(s.cols))
	row[0], row[1], row[3], row[5], row[6], row[16] = m.Kind, csvTime(m.Time), strconv.Itoa(m.Iter), strconv.FormatInt(m.Images, 10), formatFloat(m.LR), strconv.Itoa(m.Net)
	if m.Epoch > 0 {
		row[4] = formatFloat(m.Epoch)
	}
	for i, c := range s.cols {
		if i >= len(metricsFixedColumns) {
			if v, ok := m.Outputs[c[len(testColumnPrefix):]]; ok {
				row[i] = formatFloat(v)
			}
		}
	}
	return s.writeRow(row)
}

func (s *metricsSink) json(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	if _, err := s.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	return nil
}

// images counts the training images of done iterations (of the whole
// run, a resumed run's earlier part included), and the epochs they make.
func (t *Trainer) images(done int) (int64, float64) {
	n := int64(done) * int64(t.GlobalBatch())
	if t.cfg.TrainSetSize <= 0 {
		return n, 0
	}
	return n, float64(n) / float64(t.cfg.TrainSetSize)
}

// reportTest records a test pass: a metrics record per test net, and
// Deps.OnTest.
func (t *Trainer) reportTest(tr TestResult) error {
	if t.deps.OnTest != nil {
		t.deps.OnTest(tr)
	}
	if t.sink == nil {
		return nil
	}
	now := metricsTime(time.Now())
	images, epoch := t.images(tr.Iter)
	lr := t.solver.LR(max(tr.Iter-1, 0))
	var recs []TestMetrics
	for _, o := range tr.Outputs {
		for len(recs) <= o.Net {
			recs = append(recs, TestMetrics{Kind: "test", Time: now, Iter: tr.Iter, Net: len(recs), Epoch: epoch, Images: images, LR: lr, Outputs: map[string]float64{}})
		}
		recs[o.Net].Outputs[o.Output()] = o.Value
	}
	for _, r := range recs {
		if err := t.sink.test(r); err != nil {
			return err
		}
	}
	return nil
}

// caffeFloat formats v as Caffe's logs print a float: C++ streams'
// default, six significant digits.
func caffeFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// lossNote is what Caffe's log adds after a net output that carries a
// loss weight: " (* W = W×V loss)".
func lossNote(w float32, v float64) string {
	if w == 0 {
		return ""
	}
	return fmt.Sprintf(" (* %s = %s loss)", caffeFloat(float64(w)), caffeFloat(float64(w)*v))
}
