package launcher

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte("from-file\nrest\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name, flag, file string
		env              map[string]string
		want, err        string
	}{
		{name: "none is empty, not a default", want: ""},
		{name: "flag", flag: "f", env: map[string]string{"DSGD_TOKEN": "e"}, want: "f"},
		{name: "env", env: map[string]string{"DSGD_TOKEN": "e"}, want: "e"},
		{name: "file flag", file: file, want: "from-file"},
		{name: "file env", env: map[string]string{"DSGD_TOKEN_FILE": file}, want: "from-file"},
		{name: "missing file", file: filepath.Join(dir, "nope"), err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Secret{Token: tc.flag, TokenFile: tc.file}.Resolve(env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
