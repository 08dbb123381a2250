// SPDX-License-Identifier: Apache-2.0

package units

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
)

func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		want float64
	}{
		{"16.666ms", 16.666e6},
		{"40us", 40e3},
		{"40µs", 40e3},      // micro sign U+00B5
		{"40\u03bcs", 40e3}, // Greek mu U+03BC
		{"1.5s", 1.5e9},
		{"250ns", 250},
		{"0.5ns", 0.5},
		{"1m30s", 90e9},
		{"2h", 7200e9},
		{".5s", 0.5e9},
		{"+3ms", 3e6},
		{"0", 0},
		{" 8.33 ms ", 8.33e6},
		{"1h2m3.5s", 3723.5e9},
	}
	for _, c := range good {
		got, err := ParseDuration(c.in)
		if err != nil {
			t.Errorf("ParseDuration(%q): %v", c.in, err)
			continue
		}
		if math.Abs(got-c.want) > 1e-9*c.want+1e-12 {
			t.Errorf("ParseDuration(%q) = %v ns, want %v", c.in, got, c.want)
		}
	}
	bad := []struct{ in, msg string }{
		{"", "empty"},
		{"16", "no unit"},
		{"-1ms", "negative"},
		{"1.2.3s", "no unit"},
		{"5 parsecs", "unknown unit"},
		{"ms", "expected a number"},
		{"1e3ns", "unknown unit"},
		{"NaNs", "expected a number"},
		{"infs", "expected a number"},
	}
	for _, c := range bad {
		_, err := ParseDuration(c.in)
		if err == nil {
			t.Errorf("ParseDuration(%q) accepted bad input", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseDuration(%q) error %q: want one line mentioning %q", c.in, err, c.msg)
		}
	}
}

func TestParsePercent(t *testing.T) {
	good := map[string]float64{"95%": 0.95, "0.95": 0.95, "5%": 0.05, "0.05": 0.05, "99.9%": 0.999, " 90 % ": 0.9, "1": 1, "150%": 1.5}
	for in, want := range good {
		got, err := ParsePercent(in)
		if err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "95", "abc", "-5%", "1e-2", "%", "0x1p-2", "NaN%", "Inf"} {
		if v, err := ParsePercent(in); err == nil {
			t.Errorf("ParsePercent(%q) = %v, want error", in, v)
		}
	}
	for _, in := range []string{"0%", "100%", "1", "0"} {
		if _, err := ParseConfidence(in); err == nil {
			t.Errorf("ParseConfidence(%q) accepted a level outside (0, 1)", in)
		}
	}
	if c, err := ParseConfidence("95%"); err != nil || c != 0.95 {
		t.Errorf("ParseConfidence(95%%) = %v, %v", c, err)
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]float64{"1000/s": 1000, "1000": 1000, "2.5/ms": 2500, "60/min": 1, "3600/h": 1, "400Hz": 400, "2kHz": 2000, "1/us": 1e6}
	for in, want := range good {
		got, err := ParseRate(in)
		if err != nil || math.Abs(got-want) > 1e-9*want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0/s", "-5/s", "5/fortnight", "fast", "1e3/s", "/s"} {
		if v, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %v, want error", in, v)
		}
	}
}

func TestParseBatches(t *testing.T) {
	in := "# calls ticks\n1000 12\n\n 2000\t30  # second snapshot\n3000,41\r\n"
	bs, err := ParseBatches(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []estimate.Batch{{Calls: 1000, Ticks: 12}, {Calls: 2000, Ticks: 30}, {Calls: 3000, Ticks: 41}}
	if fmt.Sprint(bs) != fmt.Sprint(want) {
		t.Fatalf("ParseBatches = %v, want %v", bs, want)
	}
	bad := map[string]string{
		"":                         "no batches",
		"# only comments\n":        "no batches",
		"100\n":                    "line 1",
		"100 5 7\n":                "line 1",
		"10 1\n-5 3\n":             "line 2: calls",
		"10 1\n5 x\n":              "line 2: ticks",
		"0 0\n":                    "at least one call",
		"1.5 2\n":                  "not a non-negative integer",
		"99999999999999999999 1\n": "not a non-negative integer",
	}
	for in, msg := range bad {
		_, err := ParseBatches(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseBatches(%q) error %v, want one mentioning %q", in, err, msg)
		}
	}
}

func TestFormatNs(t *testing.T) {
	cases := map[float64]string{
		8333333:   "8.33 ms",
		40:        "40.0 ns",
		2.5e9:     "2.50 s",
		999.96:    "1.00 µs",
		3.2513e3:  "3.25 µs",
		0.5:       "0.500 ns",
		0:         "0 ns",
		-1234:     "-1.23 µs",
		7.6791e14: "768000 s",
		123456:    "123 µs",
	}
	for in, want := range cases {
		if got := Ns(in); got != want {
			t.Errorf("Ns(%v) = %q, want %q", in, got, want)
		}
	}
	m, lo, hi := Interval(8.3331e6, 8.3329e6, 8.3333e6)
	if lo == m || hi == m {
		t.Errorf("Interval did not separate a tight interval: %s [%s, %s]", m, lo, hi)
	}
	if got := Percent(0.049); got != "4.9%" {
		t.Errorf("Percent(0.049) = %q", got)
	}
}

// FuzzParseDuration checks that ParseDuration never panics, returns only
// finite non-negative values, agrees with time.ParseDuration wherever that
// accepts a non-negative value, and reads Ns output back.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"16.666ms", "40us", "40µs", "1.5s", "1m30s", "0", "-1s", "1e3ns", ".5s", "5.s", "1h2m3.5s", "9999999999999h", "0.0000000001ns", "8.33 ms", "", "\n\n1\n0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseDuration(s)
		if err == nil {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("ParseDuration(%q) = %v", s, v)
			}
			// What Ns prints must parse back within its rounding.
			if v > 0 {
				back, err := ParseDuration(Ns(v))
				if err != nil {
					t.Fatalf("Ns(%v) = %q does not parse: %v", v, Ns(v), err)
				}
				if math.Abs(back-v) > 0.005*v {
					t.Fatalf("Ns round trip %v -> %q -> %v", v, Ns(v), back)
				}
			}
		} else if strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error for %q: %q", s, err)
		}
		d, gerr := time.ParseDuration(s)
		if gerr == nil && d >= 0 && !strings.HasPrefix(s, "-") {
			if err != nil {
				t.Fatalf("time.ParseDuration(%q) = %v but ParseDuration fails: %v", s, d, err)
			}
			// time.ParseDuration truncates to whole nanoseconds.
			if math.Abs(v-float64(d)) > 1+1e-12*v {
				t.Fatalf("ParseDuration(%q) = %v, time.ParseDuration = %v", s, v, float64(d))
			}
		}
	})
}

// FuzzParsePercent checks ParsePercent never panics, returns finite
// non-negative fractions, and treats "X%" as X/100.
func FuzzParsePercent(f *testing.F) {
	for _, s := range []string{"95%", "0.95", "95", "5%", "1e-2", "%", "", "NaN", "100%", "0.000001%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParsePercent(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error for %q", s)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("ParsePercent(%q) = %v", s, v)
		}
		if !strings.HasSuffix(strings.TrimSpace(s), "%") && v > 1 {
			t.Fatalf("ParsePercent(%q) = %v: a plain fraction above 1 must be rejected", s, v)
		}
		if c, err := ParseConfidence(s); err == nil && !(c > 0 && c < 1) {
			t.Fatalf("ParseConfidence(%q) = %v outside (0,1)", s, c)
		}
	})
}

// FuzzParseRate checks ParseRate never panics and returns only positive
// finite rates.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"1000/s", "2.5/ms", "400Hz", "2kHz", "0/s", "/", "1/", "60/min"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err == nil && (!(v > 0) || math.IsInf(v, 0)) {
			t.Fatalf("ParseRate(%q) = %v", s, v)
		}
	})
}

// FuzzParseBatches checks ParseBatches never panics, returns at least one
// batch with calls > 0 on success, and that printing the batches and parsing
// them again gives the same batches.
func FuzzParseBatches(f *testing.F) {
	for _, s := range []string{"1000 12\n2000 30\n", "# c\n1 0\n", "0 0\n", "1,2\r\n3\t4 # x\n", "", "-1 2", "1 2 3"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, err := ParseBatches(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if len(bs) == 0 {
			t.Fatal("no batches but no error")
		}
		var buf bytes.Buffer
		for _, b := range bs {
			if b.Calls == 0 {
				t.Fatalf("batch with zero calls accepted: %v", bs)
			}
			fmt.Fprintf(&buf, "%d %d\n", b.Calls, b.Ticks)
		}
		again, err := ParseBatches(&buf)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(bs) {
			t.Fatalf("round trip %v -> %v, %v", bs, again, err)
		}
	})
}

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

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {512, "512 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{38797312, "37 MiB"}, {1000 << 20, "1000 MiB"}, {3 << 30, "3 GiB"}, {123456789, "118 MiB"},
	} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
