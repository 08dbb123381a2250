// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"bytes"
	"math"
	"testing"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/timing"
)

// FuzzFromData feeds arbitrary pilot files through what `plan --from`
// does with them (a time JSON document, a time profile or a CPU profile,
// planned and printed): an error, or rows whose counts are within
// estimate.MaxExecutions and whose run times are not negative or NaN;
// never a panic.
func FuzzFromData(f *testing.F) {
	f.Add([]byte(`{"confidence":0.95,"duration_s":3,"targets":[{"target":"f","calls":1000,"mean_ns":100,"low_ns":95,"high_ns":105,"confidence":0.95}]}`), 0.05, 0.0)
	f.Add([]byte(`{"confidence":7,"targets":[{"target":"f","calls":4,"mean_ns":100,"low_ns":90,"high_ns":110,"confidence":7}]}`), 0.02, 10.0)
	f.Add([]byte(`{"duration_s":1e-300,"targets":[{"target":"f","calls":18446744073709551615,"mean_ns":1e-300,"low_ns":0,"high_ns":1e300,"confidence":0.999999}]}`), 1e-9, 0.0)
	var buf bytes.Buffer
	run := &timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95, Targets: []timing.TargetResult{
		{Name: "f", Calls: 100, Ticks: 100, Estimate: estimate.Result{Mean: 100, Low: 80, High: 120, Confidence: 0.95}}}}
	if p, err := export.EncodeTime(run); err == nil {
		p.Write(&buf)
		f.Add(append([]byte{}, buf.Bytes()...), 0.05, 0.0)
	}
	f.Fuzz(func(t *testing.T, data []byte, rel, rate float64) {
		if !(rel > 0 && rel < 1) || !(rate >= 0) || math.IsInf(rate, 0) {
			return
		}
		plan, err := FromData(data, "fuzz", Pilot{Confidence: 0.95, RelHalfWidth: rel}, rate)
		if err != nil {
			return
		}
		for _, r := range plan.Targets {
			if r.Error != "" {
				continue
			}
			if r.Need > estimate.MaxExecutions || (r.MoreTimeNs != nil && (math.IsNaN(*r.MoreTimeNs) || *r.MoreTimeNs < 0)) {
				t.Fatalf("row %+v out of range", r)
			}
		}
	})
}
