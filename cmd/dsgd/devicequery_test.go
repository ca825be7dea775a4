package main

import (
	"strings"
	"testing"

	"dsgd/engine/cuda"
)

// TestDeviceQuery runs caffe device_query's counterpart under Caffe's
// spelling and dsgd's: without -gpu it is a usage error, as Caffe's
// "Need a device ID to query"; with it, on a machine without a GPU (CI)
// a failure that says what is missing, and on one with a GPU Caffe's
// lines for each GPU named.
func TestDeviceQuery(t *testing.T) {
	if code, out, errs := runCmd(t, "", "device_query"); code != 2 || out != "" || !strings.Contains(errs, "need a device ID to query") {
		t.Errorf("device_query without -gpu: exit %d, %q, %q; want 2 and Caffe's complaint", code, out, errs)
	}
	code, out, errs := runCmd(t, "", "device_query", "-gpu", "0")
	if _, err := cuda.Probe(); err != nil {
		if code != 1 || out != "" || !strings.Contains(errs, "--gpu 0: "+err.Error()) {
			t.Errorf("device_query -gpu 0 without a GPU: exit %d, %q, %q; want 1 and %q", code, out, errs, err)
		}
		return
	}
	for _, want := range []string{"Querying GPU 0\n", "Device id:                     0\n", "Number of multiprocessors:     ", "cuDNN:  "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("device-query -gpu 0 with a GPU: exit %d, output lacks %q:\n%s\n%s", code, want, out, errs)
		}
	}
	if code, _, errs := runCmd(t, "", "device-query", "--gpu", "99"); code != 1 || !strings.Contains(errs, "GPU 99 out of range") {
		t.Errorf("--gpu 99: exit %d, %q; want the index refused", code, errs)
	}
}
