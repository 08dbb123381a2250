// SPDX-License-Identifier: Apache-2.0

// Package units parses and formats the quantities people type and read:
// durations ("16.666ms", "40us", "8.33 ms"), percentages and confidence
// levels ("95%", "0.95"), rates ("1000/s"), counts and batch files. It
// holds the one duration format every table prints ("21.1 µs": three
// significant digits, a space, the unit), which its parser reads back.
// units imports estimate (for the batch type and the confidence range),
// internal/safefile (bounded reads) and no third-party module (checked by
// internal/layers).
package units

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/safefile"
)

// Every command reuses these parsers so that `16.666ms`, `95%` and
// `1000/s` mean the same thing everywhere.

// durationUnit returns the length in nanoseconds of a duration unit. Both
// the micro sign (U+00B5) and the Greek mu (U+03BC) are accepted for µs, as
// Go's time.ParseDuration does.
func durationUnit(u string) (float64, bool) {
	switch u {
	case "ns":
		return 1, true
	case "us", "\u00b5s", "\u03bcs":
		return 1e3, true
	case "ms":
		return 1e6, true
	case "s":
		return 1e9, true
	case "m":
		return 60e9, true
	case "h":
		return 3600e9, true
	}
	return 0, false
}

// maxDurationNs is the longest duration ParseDuration accepts: the
// largest time.Duration, about 292 years, so that every duration converts
// to one without wrapping (99999999999999999999h wrapped to a negative
// duration, and sampling never stopped).
const maxDurationNs = float64(math.MaxInt64)

// ParseDuration parses a duration in Go syntax ("1.5s", "40us", "16.666ms",
// "1m30s", "250ns") into float64 nanoseconds. Unlike time.ParseDuration it
// keeps fractions of a nanosecond ("0.5ns"), does not overflow at 290
// years, and ignores spaces ("8.33 ms", as Ns prints). A bare number
// without a unit is rejected (except "0"), and so are negative values:
// every duration tickprof asks for is a length.
func ParseDuration(s string) (float64, error) {
	orig := s
	// Spaces are ignored so that Ns output ("8.33 ms") parses back.
	s = strings.Join(strings.Fields(s), "")
	if s == "" {
		return 0, fmt.Errorf("empty duration: give a number with a unit, e.g. 16.666ms, 40us, 1.5s")
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("duration %q is negative: give a positive length, e.g. 16.666ms", orig)
	}
	if s[0] == '+' {
		s = s[1:]
	}
	if s == "0" {
		return 0, nil
	}
	var total float64
	for s != "" {
		// The number: digits with at most one decimal point.
		i, dot, digits := 0, false, 0
		for i < len(s) {
			c := s[i]
			if c >= '0' && c <= '9' {
				digits++
			} else if c == '.' && !dot {
				dot = true
			} else {
				break
			}
			i++
		}
		if digits == 0 {
			return 0, fmt.Errorf("invalid duration %q: expected a number with a unit such as 16.666ms, 40us or 1.5s", orig)
		}
		v, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: %v", orig, err)
		}
		s = s[i:]
		// The unit: everything up to the next digit or '.'.
		j := 0
		for j < len(s) && s[j] != '.' && (s[j] < '0' || s[j] > '9') {
			j++
		}
		unit := s[:j]
		if unit == "" {
			return 0, fmt.Errorf("duration %q has no unit: add one of ns, us, µs, ms, s, m, h (e.g. 16.666ms)", orig)
		}
		mult, ok := durationUnit(unit)
		if !ok {
			return 0, fmt.Errorf("duration %q has unknown unit %q: use ns, us, µs, ms, s, m or h", orig, unit)
		}
		s = s[j:]
		total += v * mult
	}
	if !(total <= maxDurationNs) {
		return 0, fmt.Errorf("duration %q is longer than 292 years, the longest tickprof handles (a Go time.Duration): give a shorter one", orig)
	}
	return total, nil
}

// ParsePercent parses a fraction written either as a percentage ("95%",
// "2.5%") or as a plain fraction ("0.95", "0.025") and returns the fraction.
// A plain number above 1 is rejected as ambiguous ("95" could mean 95% or
// 9500%): the error tells the user to add the percent sign.
func ParsePercent(s string) (float64, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty value: give a percentage such as 95%% or a fraction such as 0.95")
	}
	pct := strings.HasSuffix(s, "%")
	if pct {
		s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	}
	if !isPlainDecimal(s) {
		return 0, fmt.Errorf("invalid percentage %q: write it as 95%% or 0.95", orig)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("invalid percentage %q: write it as 95%% or 0.95", orig)
	}
	if pct {
		return v / 100, nil
	}
	if v > 1 {
		return 0, fmt.Errorf("ambiguous value %q: write %s%% for a percentage or a fraction at most 1 such as 0.95", orig, s)
	}
	return v, nil
}

// ParseConfidence parses a confidence level (see ParsePercent) and checks
// that it lies strictly between 0 and 1.
func ParseConfidence(s string) (float64, error) {
	c, err := ParsePercent(s)
	if err != nil {
		return 0, err
	}
	if !(c >= estimate.MinConfidence && c <= estimate.MaxConfidence) {
		return 0, fmt.Errorf("confidence %q must lie between %s and %s (a level that rounds to 100%% has an infinite interval), e.g. 95%%", s,
			Percent(estimate.MinConfidence), Percent(estimate.MaxConfidence))
	}
	return c, nil
}

// rateUnit returns the length in seconds of the denominator of a rate
// ("N/s", "N/ms").
func rateUnit(u string) (float64, bool) {
	switch u {
	case "sec":
		u = "s"
	case "min":
		u = "m"
	}
	ns, ok := durationUnit(u)
	return ns / 1e9, ok
}

// ParseRate parses an event rate and returns events per second. Accepted
// forms: "1000/s", "2.5/ms", "60/min", "3600/h", "400Hz", "2kHz", or a bare
// number meaning per second. The rate must be positive.
func ParseRate(s string) (float64, error) {
	orig := s
	s = strings.TrimSpace(s)
	var num string
	var per float64 = 1
	switch {
	case strings.Contains(s, "/"):
		k := strings.Index(s, "/")
		num = strings.TrimSpace(s[:k])
		unit := strings.TrimSpace(s[k+1:])
		u, ok := rateUnit(unit)
		if !ok {
			return 0, fmt.Errorf("rate %q has unknown unit %q: write e.g. 1000/s, 2.5/ms, 60/min", orig, unit)
		}
		per = u
	case strings.HasSuffix(s, "kHz"):
		num, per = strings.TrimSuffix(s, "kHz"), 1e-3
	case strings.HasSuffix(s, "MHz"):
		num, per = strings.TrimSuffix(s, "MHz"), 1e-6
	case strings.HasSuffix(s, "Hz"):
		num = strings.TrimSuffix(s, "Hz")
	default:
		num = s
	}
	num = strings.TrimSpace(num)
	if !isPlainDecimal(num) {
		return 0, fmt.Errorf("invalid rate %q: write calls per second such as 1000/s, 2.5/ms or 400Hz", orig)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid rate %q: write calls per second such as 1000/s", orig)
	}
	r := v / per
	if !(r > 0) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("rate %q must be a positive finite number of calls per second, e.g. 1000/s", orig)
	}
	return r, nil
}

// isPlainDecimal reports whether s is digits with at most one decimal point
// and at least one digit (no sign, exponent, hex, inf or nan).
func isPlainDecimal(s string) bool {
	digits, dot := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// maxBatchesFile is the largest --batches file read: 64 MiB is millions
// of batches, more than any run polls.
const maxBatchesFile = 64 << 20

// ReadBatchesFile reads a --batches file (see ParseBatches).
func ReadBatchesFile(path string) ([]estimate.Batch, error) {
	return safefile.ReadParsed(path, "batches file", maxBatchesFile, ParseBatches)
}

// ParseBatches reads a --batches file: one "calls ticks" pair per line (the
// increments of the call and tick counters over one polling period), two
// non-negative integers separated by spaces, tabs or a comma. Text after '#' is a comment;
// blank lines are skipped. Every batch needs at least one call, and the file
// at least one batch.
func ParseBatches(r io.Reader) ([]estimate.Batch, error) {
	var out []estimate.Batch
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if !utf8.ValidString(text) {
			return nil, fmt.Errorf("line %d: not text; expected \"calls ticks\"", line)
		}
		if k := strings.IndexByte(text, '#'); k >= 0 {
			text = text[:k]
		}
		fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' })
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: got %d fields, expected two integers \"calls ticks\"", line, len(fields))
		}
		calls, err := ParseCount(fields[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: calls: %w", line, err)
		}
		ticks, err := ParseCount(fields[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: ticks: %w", line, err)
		}
		if calls == 0 {
			return nil, fmt.Errorf("line %d: a batch needs at least one call", line)
		}
		out = append(out, estimate.Batch{Calls: calls, Ticks: ticks})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: line too long; expected \"calls ticks\"", line+1)
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no batches: expected one \"calls ticks\" pair per line")
	}
	return out, nil
}

// ParseCount parses a non-negative decimal integer.
func ParseCount(s string) (uint64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q is negative: counts are non-negative integers", s)
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a non-negative integer", s)
	}
	return v, nil
}

// Ns formats a duration given in float64 nanoseconds with three
// significant digits in the largest unit among ns, µs, ms and s that keeps
// the value at or above 1: 8333333 -> "8.33 ms", 40 -> "40.0 ns",
// 2.5e9 -> "2.50 s". Values below 1 ns keep ns ("0.500 ns").
func Ns(ns float64) string { return NsDigits(ns, 3) }

// NsDigits is Ns with sig significant digits (1 to 15).
func NsDigits(ns float64, sig int) string {
	if sig < 1 {
		sig = 1
	}
	if sig > 15 {
		sig = 15
	}
	switch {
	case math.IsNaN(ns):
		return "NaN"
	case math.IsInf(ns, 1):
		return "+Inf"
	case math.IsInf(ns, -1):
		return "-Inf"
	case ns == 0:
		return "0 ns"
	}
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	// Round to sig digits first so that 999.96 ns becomes "1.00 µs".
	r, _ := strconv.ParseFloat(strconv.FormatFloat(ns, 'e', sig-1, 64), 64)
	unit, div := nsUnit(r)
	v := r / div
	if v >= 1e9 {
		// Past a billion seconds (32 years) digits say nothing more.
		return sign + strconv.FormatFloat(v, 'g', sig, 64) + " " + unit
	}
	// Decimals so that the total significant digits equal sig.
	// (intDigits is <= 0 for values below 1, giving extra decimals.)
	intDigits := int(math.Floor(math.Log10(v))) + 1
	dec := sig - intDigits
	if dec < 0 {
		dec = 0
	}
	return sign + strconv.FormatFloat(v, 'f', dec, 64) + " " + unit
}

// Interval formats a point estimate and its interval with the fewest
// significant digits (at least 3) at which the estimate and both bounds are
// told apart, so that a tight interval does not print as [8.33 ms, 8.33 ms].
func Interval(mean, low, high float64) (m, lo, hi string) {
	return apart(NsDigits, mean, low, high)
}

// apart formats a point estimate and its bounds with format at the fewest
// significant digits, from 3 to 9, at which each bound differs from the
// estimate unless it equals it.
func apart(format func(v float64, sig int) string, mean, low, high float64) (m, lo, hi string) {
	for sig := 3; sig <= 9; sig++ {
		m, lo, hi = format(mean, sig), format(low, sig), format(high, sig)
		if (lo != m || low == mean) && (hi != m || high == mean) {
			return m, lo, hi
		}
	}
	return m, lo, hi
}

// Percent formats a fraction as a percentage with up to 3 significant
// digits: 0.95 -> "95%", 0.049 -> "4.9%", 0.000123 -> "0.0123%".
func Percent(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	v := 100 * f
	s := strconv.FormatFloat(v, 'g', 3, 64)
	// A level just below 100% must not print as 100%: more digits.
	for sig := 4; sig <= 15 && v < 100 && v > 99; sig++ {
		if r, _ := strconv.ParseFloat(s, 64); r < 100 {
			break
		}
		s = strconv.FormatFloat(v, 'f', sig, 64)
		s = strings.TrimRight(s, "0")
	}
	if strings.ContainsAny(s, "e") {
		if math.Abs(v) >= 1 {
			// 2369.13 -> "2369", not "2.37e+03" or every digit.
			s = strconv.FormatFloat(math.Round(v), 'f', 0, 64)
		} else {
			s = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return s + "%"
}

// NsExact formats a duration the user gave (a resolution, an
// expected time) without rounding, in the unit Ns would pick:
// 16666000 -> "16.666 ms", 40000 -> "40 µs".
func NsExact(ns float64) string {
	if math.IsNaN(ns) || math.IsInf(ns, 0) || ns == 0 {
		return Ns(ns)
	}
	a := math.Abs(ns)
	if a >= 1e18 {
		return Ns(ns)
	}
	unit, div := nsUnit(a)
	return strconv.FormatFloat(ns/div, 'f', -1, 64) + " " + unit
}

// nsUnit returns the unit Ns prints a non-negative a (ns) in, and the
// nanoseconds in one of it.
func nsUnit(a float64) (unit string, div float64) {
	switch {
	case a >= 1e9:
		return "s", 1e9
	case a >= 1e6:
		return "ms", 1e6
	case a >= 1e3:
		return "µs", 1e3
	}
	return "ns", 1
}

// LongNs is Ns followed, for two minutes and more, by the same
// time in minutes, hours or days: "7300 s (2.03 h)".
func LongNs(ns float64) string {
	s := Ns(ns)
	sec := ns / 1e9
	switch {
	case math.IsNaN(sec) || math.IsInf(sec, 0) || sec < 120:
		return s
	case sec < 2*3600:
		return s + " (" + strconv.FormatFloat(sec/60, 'g', 3, 64) + " min)"
	case sec < 3*86400:
		return s + " (" + strconv.FormatFloat(sec/3600, 'g', 3, 64) + " h)"
	default:
		return s + " (" + strconv.FormatFloat(sec/86400, 'g', 3, 64) + " days)"
	}
}

// Number formats a plain number without exponent or trailing zeros.
func Number(f float64) string {
	if math.Abs(f) >= 1e15 || (f != 0 && math.Abs(f) < 1e-6) {
		return strconv.FormatFloat(f, 'g', 6, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// JSONFloat is a float64 that encodes NaN and ±Inf as JSON null (which
// encoding/json otherwise refuses), e.g. the relative half-width of a zero
// mean.
type JSONFloat float64

// MarshalJSON encodes finite values as numbers and the rest as null.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// PercentDigits formats a fraction as a percentage with sig
// significant digits, keeping trailing zeros: (0.0062, 3) -> "0.620%".
func PercentDigits(f float64, sig int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if f == 0 {
		return "0%"
	}
	v := 100 * f
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'e', sig-1, 64), 64)
	dec := sig - (int(math.Floor(math.Log10(math.Abs(r)))) + 1)
	if dec < 0 {
		dec = 0
	}
	return strconv.FormatFloat(r, 'f', dec, 64) + "%"
}

// ShareInterval formats a share and its bounds as percentages with
// the fewest significant digits (at least 3) that tell them apart.
func ShareInterval(share, low, high float64) (m, lo, hi string) {
	return apart(PercentDigits, share, low, high)
}

// Bytes formats a size in bytes with 3 significant digits in the binary
// unit that fits: 512 -> "512 B", 38797312 -> "37 MiB".
func Bytes(n int64) string {
	v, unit := float64(n), "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if math.Abs(v) < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	if math.Abs(v) >= 100 {
		// 1000 to 1023 of a unit: all the digits, not "1e+03".
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + " " + unit
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " " + unit
}
