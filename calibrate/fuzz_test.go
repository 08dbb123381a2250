// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

// FuzzParseCalibration feeds arbitrary calibration files to the parser
// LoadFrom uses: an error, or values in range whose use (the overhead at
// another confidence, the correction of a mean) is finite and never
// panics.
func FuzzParseCalibration(f *testing.F) {
	c, _ := trustCal()
	good, _ := json.Marshal(c)
	f.Add(good, 0.99)
	f.Add([]byte(`{"version":2,"overheads":[{"kind":"user","mean_ns":-5,"low_ns":-6,"high_ns":-4,"confidence":0.95}]}`), 0.95)
	f.Add([]byte(`{"overheads":[{"kind":"user","mean_ns":1,"low_ns":0,"high_ns":2,"stderr_ns":0.5,"df":3,"confidence":0.5}]}`), 0.999999)
	f.Add([]byte(`{`), 0.5)
	f.Fuzz(func(t *testing.T, data []byte, conf float64) {
		cal, err := ParseCalibration(data)
		if err != nil {
			return
		}
		raw := estimate.Result{Mean: 5000, Low: 4900, High: 5100, StdErr: 51, Confidence: 0.95, Calls: 1000, Events: 1000}
		for _, o := range cal.Overheads {
			if o.MeanNs < 0 || o.MeanNs >= MaxOverheadNs || !(o.LowNs <= o.MeanNs && o.MeanNs <= o.HighNs) || !(o.Confidence > 0 && o.Confidence < 1) {
				t.Fatalf("accepted out-of-range overhead %+v", o)
			}
			r := o.At(conf)
			if conf > 0 && conf < 1 && (math.IsNaN(r.Low) || math.IsNaN(r.High)) {
				t.Fatalf("overhead %+v at %v: %+v", o, conf, r)
			}
			if got, err := Correct(raw, o); err == nil && (math.IsNaN(got.Mean) || got.Low > got.High) {
				t.Fatalf("correct %+v by %+v: %+v", raw, o, got)
			}
		}
	})
}
