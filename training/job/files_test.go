package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dsgd/training/train"
)

// TestRunFiles: each process of a group writes its own records and
// trace, rank 0 alone the log (a center's process none), a CSV named
// .csv is written as CSV, a resumed run appends under a header it checks.
func TestRunFiles(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	files := Files{Metrics: at("m.csv"), Log: at("log"), Timeline: at("trace.json")}

	var cfg train.Config
	var one RunFiles
	if err := one.Open(&cfg, files); err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics == nil || cfg.MetricsFormat != train.MetricsCSV || cfg.MetricsNoHeader || cfg.CaffeLog == nil || cfg.Timeline == nil {
		t.Fatalf("one process: Config %+v", cfg)
	}
	one.Metrics.Write([]byte("a,b\n1,2\n"))
	one.Close(func(err error) { t.Error(err) })

	cfg = train.Config{Group: &train.Group{Rank: 1, Size: 2}}
	var rank1 RunFiles
	if err := rank1.Open(&cfg, files); err != nil {
		t.Fatal(err)
	}
	if rank1.MetricsPath != at("m.csv.rank1") || cfg.CaffeLog != nil || cfg.MetricsFormat != train.MetricsCSV {
		t.Errorf("rank 1: records at %s, log %v, format %v", rank1.MetricsPath, cfg.CaffeLog != nil, cfg.MetricsFormat)
	}
	rank1.Close(func(err error) { t.Error(err) })
	if _, err := os.Stat(at("trace.json.rank1")); err != nil {
		t.Errorf("rank 1's trace: %v", err)
	}

	cfg = train.Config{Group: &train.Group{Rank: 0, Size: 2}}
	var center RunFiles
	if err := center.Open(&cfg, Files{Log: at("clog"), Center: true}); err != nil {
		t.Fatal(err)
	}
	if cfg.CaffeLog != nil {
		t.Error("a center's process writes the log")
	}

	cfg = train.Config{Resume: "snap"}
	var resumed RunFiles
	defer resumed.Close(func(err error) { t.Error(err) })
	if err := resumed.Open(&cfg, Files{Metrics: at("m.csv")}); err != nil {
		t.Fatal(err)
	}
	if !cfg.MetricsNoHeader {
		t.Fatal("appending to a CSV file with a header writes another")
	}
	if err := resumed.CheckHeader(cfg, []string{"a", "b"}); err != nil {
		t.Errorf("the same columns: %v", err)
	}
	if err := resumed.CheckHeader(cfg, []string{"a", "c"}); err == nil || !strings.Contains(err.Error(), "Files.Metrics "+at("m.csv")+": the file's CSV header is not this run's columns") {
		t.Errorf("other columns: %v", err)
	}

	var bad RunFiles
	cfg = train.Config{}
	if err := bad.Open(&cfg, Files{Timeline: at("no/such/dir/trace")}); err == nil || !strings.HasPrefix(err.Error(), "Files.Timeline: cannot create the trace file") {
		t.Errorf("an uncreatable trace: %v", err)
	}
}
