package enginebench

import (
	"reflect"
	"slices"
	"testing"
)

func TestParsePerNet(t *testing.T) {
	tests := []struct {
		in   string
		min  int
		want map[string]int
		err  bool
	}{
		{"", 1, map[string]int{}, false},
		{"  ", 1, map[string]int{}, false},
		{"7", 1, map[string]int{"": 7}, false},
		{"0", 0, map[string]int{"": 0}, false},
		{"0", 1, nil, true},
		{"lenet=5,googlenet=1", 1, map[string]int{"lenet": 5, "googlenet": 1}, false},
		{" lenet = 5 ", 1, map[string]int{"lenet": 5}, false},
		{"lenet=", 1, nil, true},
		{"=5", 1, nil, true},
		{"lenet=5,", 1, nil, true},
		{"resnet=5", 1, nil, true},
		{"lenet=x", 1, nil, true},
		{"5,6", 1, nil, true},
	}
	for _, tt := range tests {
		got, err := ParsePerNet(tt.in, tt.min)
		if (err != nil) != tt.err || !tt.err && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePerNet(%q, %d) = %v, %v; want %v (error %v)", tt.in, tt.min, got, err, tt.want, tt.err)
		}
	}
}

// FuzzParsePerNet: any input gives a map of known nets (or "") to values
// of at least min, or an error; never a panic.
func FuzzParsePerNet(f *testing.F) {
	for _, s := range []string{"", "3", "lenet=2,caffenet=1", "x=1", "=", ",,", "lenet=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParsePerNet(s, 1)
		if err != nil {
			return
		}
		for k, v := range m {
			if k != "" && !slices.Contains(NetNames(), k) || v < 1 {
				t.Fatalf("ParsePerNet(%q) = %v", s, m)
			}
		}
	})
}
