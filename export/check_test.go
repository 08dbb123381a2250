// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

// TestClockCheckReported: a failed clock check is a warning in the
// profile's comments and survives the JSON round trip; a passed but weak
// one is a note; a sharp passed one says nothing.
func TestClockCheckReported(t *testing.T) {
	r := sampleRun()
	small, big := &r.Targets[0], &r.Targets[1]
	small.Raw, big.Raw = small.Estimate, big.Estimate
	small.ClockCheck = &estimate.ClockCheck{Calls: 64, Exact: 100e3, Agree: false,
		Tick: estimate.Result{Mean: 3.5e6, Low: 3e6, High: 4e6, Confidence: 0.99, StdErr: 2e5}}
	big.ClockCheck = &estimate.ClockCheck{Calls: 10, Exact: 2e6, Agree: true,
		Tick: estimate.Result{Mean: 2e6, Low: 0, High: 6e6, Confidence: 0.99, StdErr: 1.5e6}}
	if w := ClockWarning(small, r.Clock); !strings.Contains(w, "warning: small: the jiffies clock is not asynchronous") ||
		!strings.Contains(w, "3.5ms [3ms, 4ms] (99%) where their exact mean is 100µs") {
		t.Errorf("warning %q", w)
	}
	if n := ClockNote(small, r.Clock); n != "" {
		t.Errorf("a failed check got a note too: %q", n)
	}
	if n := ClockNote(big, r.Clock); !strings.Contains(n, "rules out only a bias beyond ±150% of the mean") {
		t.Errorf("note %q", n)
	}
	if w := ClockWarning(big, r.Clock); w != "" {
		t.Errorf("a passed check warned: %q", w)
	}
	big.ClockCheck.Tick.Low, big.ClockCheck.Tick.High = 1.7e6, 2.3e6 // as sharp as the estimate
	if n := ClockNote(big, r.Clock); n != "" {
		t.Errorf("a sharp check got a note: %q", n)
	}
	p, err := EncodeTime(r)
	if err != nil {
		t.Fatal(err)
	}
	if cm := strings.Join(p.Comments, "\n"); !strings.Contains(cm, "warning: small:") {
		t.Errorf("profile comments lack the warning: %s", cm)
	}
	var buf bytes.Buffer
	if err := WriteTimeJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"clock_check": {`) || !strings.Contains(buf.String(), `"agree": false`) {
		t.Errorf("JSON lacks clock_check: %s", buf.String())
	}
	got, err := ReadTimeJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ck := got.Targets[0].ClockCheck
	if ck == nil || ck.Agree || ck.Calls != 64 || ck.Exact != 100e3 || ck.Tick.Mean != 3.5e6 || ck.Tick.High != 4e6 {
		t.Errorf("round trip: %+v", ck)
	}
	if got.Targets[2].ClockCheck != nil {
		t.Errorf("a target without a check got one: %+v", got.Targets[2].ClockCheck)
	}
}

// TestValidateNote: a --validate run says in its comments what COVERED
// checks.
func TestValidateNote(t *testing.T) {
	r := sampleRun()
	r.Validate = true
	p, err := EncodeTime(r)
	if err != nil {
		t.Fatal(err)
	}
	if cm := strings.Join(p.Comments, "\n"); !strings.Contains(cm, "exact mean of the same calls") || !strings.Contains(cm, "not a check against the function's long-run mean") {
		t.Errorf("comments: %s", cm)
	}
}
