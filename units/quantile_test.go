package units

import (
	"slices"
	"testing"
)

func TestParseQuantiles(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []float64
		bad  bool
	}{
		{in: "50,90,99,99.9", want: []float64{0.5, 0.9, 0.99, 0.999}},
		{in: " p99 , P99.99", want: []float64{0.99, 0.9999}},
		{in: "none"},
		{in: ""},
		{in: "0", bad: true},
		{in: "100", bad: true},
		{in: "99,x", bad: true},
		{in: "-5", bad: true},
	} {
		got, err := ParseQuantiles(c.in)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("ParseQuantiles(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.bad)
		}
	}
}
