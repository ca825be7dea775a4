package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"dsgd/caffe/caffemodel"
	"dsgd/training/checkpoint"
)

// notRecorded are the flags a snapshot does not record: they describe
// this machine or this process rather than the run, or are secrets.
var notRecorded = map[string]bool{
	"resume": true, "snapshot": true, "gpu": true, "threads": true, "metrics": true, "log": true, "timeline": true, "metrics-listen": true,
	"token": true, "token-file": true, "store": true,
	"rank": true, "world": true, "rendezvous": true, "listen": true, "center": true, "shard": true,
}

// runRecord is the run configuration a snapshot carries: the flags that
// shaped the run, by name, as the command line would give them.
type runRecord struct {
	Version int               `json:"version"`
	Flags   map[string]string `json:"flags"`
}

// record returns the run configuration of f's run to store in its
// snapshots: every flag given on the command line but those of
// notRecorded, and the scheme and worker count as the run used them, and
// transport when it is not "" (a rank of a multi-process run, whose
// --transport the launcher stripped).
func (f *trainFlags) record(scheme string, workers int, transport string) []byte {
	r := runRecord{Version: 1, Flags: map[string]string{}}
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) {
			if !notRecorded[fl.Name] {
				r.Flags[fl.Name] = fl.Value.String()
			}
		})
	}
	r.Flags["scheme"], r.Flags["workers"] = scheme, strconv.Itoa(workers)
	if transport != "" {
		r.Flags["transport"] = transport
	}
	b, _ := json.Marshal(r) // strings only: cannot fail
	return b
}

// restoreRun applies the run configuration recorded in the snapshot path
// to the flags of fs that the command line did not set, and says on out
// what it restored and what the command line overrides. A snapshot of an
// older dsgd, without a configuration, restores nothing (and says so).
func restoreRun(fs *flag.FlagSet, path string, out io.Writer) error {
	if path == "" {
		return nil
	}
	if caffemodel.IsState(path) {
		fmt.Fprintf(out, "dsgd: --resume %s: a Caffe solver state records no dsgd run flags: give them again\n", path)
		return nil
	}
	raw, err := checkpoint.ReadRun(path)
	if err != nil {
		return fmt.Errorf("--resume: %w", err)
	}
	if len(raw) == 0 {
		fmt.Fprintf(out, "dsgd: --resume %s: the snapshot does not record its run's flags (an older dsgd wrote it): give them again\n", path)
		return nil
	}
	var r runRecord
	if err := json.Unmarshal(raw, &r); err != nil || r.Version != 1 {
		return fmt.Errorf("--resume %s: unreadable run configuration (version %d): %v", path, r.Version, err)
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var restored, overridden []string
	names := make([]string, 0, len(r.Flags))
	for k := range r.Flags {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := r.Flags[k]
		fl := fs.Lookup(k)
		if fl == nil || notRecorded[k] {
			continue
		}
		if given[k] {
			if cur := fl.Value.String(); cur != v {
				overridden = append(overridden, fmt.Sprintf("--%s %s (the snapshot's run: %s)", k, cur, v))
			}
			continue
		}
		if fl.Value.String() == v {
			continue
		}
		if err := fs.Set(k, v); err != nil {
			return fmt.Errorf("--resume %s: recorded --%s %q: %v", path, k, v, err)
		}
		restored = append(restored, fmt.Sprintf("--%s %s", k, v))
	}
	if len(restored) > 0 {
		fmt.Fprintf(out, "dsgd: --resume: restoring the snapshot's run: %s\n", strings.Join(restored, " "))
	}
	if len(overridden) > 0 {
		fmt.Fprintf(out, "dsgd: --resume: given now, overriding the snapshot's run: %s\n", strings.Join(overridden, ", "))
	}
	return nil
}
