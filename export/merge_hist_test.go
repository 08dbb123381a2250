// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
)

// histWindows simulates n windows of a target timed with the ns clock,
// calls of exponential duration with mean et ns, each window with its
// histogram; it returns the window profiles and the union's histogram.
func histWindows(t *testing.T, r *rand.Rand, n, calls int, et float64, wire bool) ([]*profile.Profile, *histogram.Hist) {
	union := &histogram.Hist{}
	var ps []*profile.Profile
	for i := 0; i < n; i++ {
		tg := TimeWindowTarget{Name: "main.work", Binary: "/bin/app", Hist: &histogram.Hist{}}
		for k := 0; k < calls; k++ {
			c := uint64(et * r.ExpFloat64())
			tg.Calls++
			tg.Ticks += c
			tg.TicksSq += c * c
			tg.Hist.Add(c)
			union.Add(c)
		}
		tw := &TimeWindow{Clock: "ns", Resolution: 1, Confidence: 0.95, Quantiles: []float64{0.5, 0.99},
			Start: time.Unix(1700000000+int64(10*i), 0), Duration: 10 * time.Second,
			Targets: []TimeWindowTarget{tg, {Name: "read", Calls: 2, Ticks: 3000, TicksSq: 5e6, Hist: &histogram.Hist{}}}}
		p, err := EncodeTimeWindow(tw)
		if err != nil {
			t.Fatal(err)
		}
		if wire {
			p = roundTrip(t, p)
		}
		ps = append(ps, p)
	}
	return ps, union
}

func mergedRow(t *testing.T, ps []*profile.Profile, target string) TimeRow {
	t.Helper()
	merged, err := profile.Merge(ps)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := TimeReport(merged)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tab.Rows {
		if r.Target == target {
			return r
		}
	}
	t.Fatalf("no row of %s in %+v", target, tab.Rows)
	return TimeRow{}
}

// TestMergedTimeWindowHistograms: the histograms of time windows merged as
// a backend merges them give report the quantiles of the union's
// histogram (bucket counts add exactly), and intervals that hold those of
// the union with its exact minimum and maximum (only the two end buckets
// can widen).
func TestMergedTimeWindowHistograms(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 11))
	for _, n := range []int{1, 4, 20} {
		ps, union := histWindows(t, r, n, 300, 2000, true)
		row := mergedRow(t, ps, "main.work")
		o := estimate.Options{Confidence: 0.95}
		want, err := MergedQuantiles(union, []float64{0.5, 0.99}, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(row.Quantiles) != 2 {
			t.Fatalf("n=%d: merged row has quantiles %+v", n, row.Quantiles)
		}
		for i, q := range want {
			if !reflect.DeepEqual(row.Quantiles[i], NewQuantileJSON(q)) {
				t.Errorf("n=%d: p%v of the merged windows %+v, union's histogram %+v", n, q.P, row.Quantiles[i], NewQuantileJSON(q))
			}
			exact, err := union.Quantile(q.P, o)
			if err != nil {
				t.Fatal(err)
			}
			if q.Low > exact.Low || q.High < exact.High || q.Value != exact.Value {
				t.Errorf("n=%d: p%v merged %v [%v, %v], union with exact min/max %v [%v, %v]", n, q.P, q.Value, q.Low, q.High, exact.Value, exact.Low, exact.High)
			}
		}
		var buf bytes.Buffer
		tab := &TimeTable{Rows: []TimeRow{row}, Confidence: 0.95}
		if err := tab.WriteText(&buf, 0); err != nil || !bytes.Contains(buf.Bytes(), []byte("p99 ")) {
			t.Errorf("report text lacks the quantiles (%v):\n%s", err, buf.String())
		}
	}
}

// TestMergedQuantileCoverage: the p50 and p99 intervals of merged windows
// (4 windows of 250 exponential calls each) cover the true quantiles in at
// least 95% of 300 runs. Counted as binomial(300, 0.95) at the worst
// (bucket widening only raises coverage), fewer than 272 covers has
// probability about 3e-4: the test's false-alarm rate.
func TestMergedQuantileCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	const et, reps = 2000.0, 300
	truth := map[float64]float64{0.5: et * math.Ln2, 0.99: et * math.Log(100)}
	covered := map[float64]int{}
	for k := 0; k < reps; k++ {
		ps, _ := histWindows(t, r, 4, 250, et, false)
		row := mergedRow(t, ps, "main.work")
		for _, j := range row.Quantiles {
			q := j.ToQuantile()
			if q.Low <= truth[q.P] && truth[q.P] <= q.High {
				covered[q.P]++
			}
		}
	}
	for p := range truth {
		t.Logf("p%v: %d/%d intervals cover %.0f ns", 100*p, covered[p], reps, truth[p])
		if covered[p] < 272 {
			t.Errorf("p%v: %d of %d intervals cover the true quantile, want at least 272 (95%%)", 100*p, covered[p], reps)
		}
	}
}
