package main

import (
	"bytes"
	"strings"
	"testing"

	"dsgd/engine/cpuinfo"
)

// TestPrintISACap checks what the run header says of an ISA cap in the
// environment: a name oneDNN does not know is a warning that says it is
// ignored, a cap this CPU has is stated, and no cap says nothing.
func TestPrintISACap(t *testing.T) {
	if cpuinfo.CheckFloor() != nil {
		t.Skip("this CPU is below SSE4.1: the header warns of that instead")
	}
	cases := []struct {
		env, want string
	}{
		{"", ""},
		{"FOO", "warning: ONEDNN_MAX_CPU_ISA=FOO: unknown ISA"},
		{"sse41", "capped at SSE41 by ONEDNN_MAX_CPU_ISA"},
	}
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("ONEDNN_MAX_CPU_ISA", tc.env)
			t.Setenv("DNNL_MAX_CPU_ISA", "")
			var b bytes.Buffer
			printISACap(&b)
			if tc.want == "" && b.Len() != 0 || !strings.Contains(b.String(), tc.want) {
				t.Fatalf("ONEDNN_MAX_CPU_ISA=%q: header %q, want it to say %q", tc.env, b.String(), tc.want)
			}
		})
	}
	// A level above this CPU's: a warning naming what is missing.
	if top := cpuinfo.CPUISA(); top < cpuinfo.AVX512CoreAMX {
		t.Setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_AMX")
		var b bytes.Buffer
		printISACap(&b)
		if !strings.Contains(b.String(), "warning: ONEDNN_MAX_CPU_ISA=AVX512_CORE_AMX") || !strings.Contains(b.String(), "missing") {
			t.Fatalf("cap above the CPU (%v): header %q", top, b.String())
		}
	}
}
