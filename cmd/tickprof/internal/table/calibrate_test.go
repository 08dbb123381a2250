// SPDX-License-Identifier: Apache-2.0

package table

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/calibrate"
)

// TestWriteCalibrationInCall prints a saved calibration with an in-call
// model: the model's line and one row per fitted pattern, with the model's
// prediction beside the measured overhead.
func TestWriteCalibrationInCall(t *testing.T) {
	raw, err := os.ReadFile("testdata/calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	var c calibrate.Calibration
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteCalibration(&b, &c); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"in-call overhead, user: O = -993 ns + (1.563 + 0.129 u) G_on + P",
		"in-call overhead, go: O = 536 ns + (0.836 + 0.212 u) G_on + P",
		"  empty back to back ", "  2µs handler after sleep 1ms ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The back-to-back row: 1.21 µs gap, 960 ns measured, the model's
	// -993 + 1.563*1211 + 4 = 904 ns.
	if !regexp.MustCompile(`empty back to back +560106 +26835 +0 ns +1\.21 µs +4\.45 ns +960 ns ± 34\.6 ns +904 ns\n`).MatchString(out) {
		t.Errorf("back-to-back row not as computed:\n%s", out)
	}
}
