package job

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"dsgd/engine/cpuinfo"
)

// TestWriteISACap checks what the run header says of an ISA cap in the
// environment: a name oneDNN does not know is a warning that says it is
// ignored, a cap this CPU has is stated, and no cap says nothing.
func TestWriteISACap(t *testing.T) {
	if cpuinfo.CheckFloor() != nil {
		t.Skip("this CPU is below SSE4.1: the header warns of that instead")
	}
	// A warning goes to the second writer (stderr), a note to the first.
	cases := []struct {
		env, want string
		warn      bool
	}{
		{"", "", false},
		{"FOO", "warning: ONEDNN_MAX_CPU_ISA=FOO: unknown ISA", true},
		{"sse41", "capped at SSE41 by ONEDNN_MAX_CPU_ISA", false},
	}
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("ONEDNN_MAX_CPU_ISA", tc.env)
			t.Setenv("DNNL_MAX_CPU_ISA", "")
			var out, errw bytes.Buffer
			WriteISACap(&out, &errw)
			b, other := &out, &errw
			if tc.warn {
				b, other = &errw, &out
			}
			if tc.want == "" && b.Len() != 0 || !strings.Contains(b.String(), tc.want) {
				t.Fatalf("ONEDNN_MAX_CPU_ISA=%q: header %q, want it to say %q", tc.env, b.String(), tc.want)
			}
			if other.Len() != 0 {
				t.Fatalf("ONEDNN_MAX_CPU_ISA=%q: %q on the wrong stream (warning %v)", tc.env, other.String(), tc.warn)
			}
		})
	}
	// A level above this CPU's: a warning naming what is missing.
	if top := cpuinfo.CPUISA(); top < cpuinfo.AVX512CoreAMX {
		t.Setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_AMX")
		var b bytes.Buffer
		WriteISACap(io.Discard, &b)
		if !strings.Contains(b.String(), "warning: ONEDNN_MAX_CPU_ISA=AVX512_CORE_AMX") || !strings.Contains(b.String(), "missing") {
			t.Fatalf("cap above the CPU (%v): header %q", top, b.String())
		}
	}
}
