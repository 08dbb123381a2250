// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/budget"
	"github.com/tickprof/tickprof/internal/loader"
)

// nsCounters are the counters of n calls of mean ns each with per-call
// standard deviation sd (ns clock: ticks are ns).
func nsCounters(n uint64, mean, sd float64) loader.Counters {
	sum := uint64(float64(n) * mean)
	sq := float64(n) * (mean*mean + sd*sd)
	hi, lo := math.Floor(sq/math.Exp2(64)), math.Mod(sq, math.Exp2(64))
	sq128 := loader.U128{Hi: uint64(hi), Lo: uint64(lo)}
	return loader.Counters{Calls: n, Ticks: sum, TicksSq: sq128, NsSum: sum, NsSq: sq128}
}

// TestPrecisionRuleNeedsBatches reproduces the flaky stop: with the ns
// clock, two polls whose batch means agree make the batch-means interval
// narrower than the per-call one, which was then reported with no batch
// count, so estimate.Reached let it stop; one poll later the batch-means
// interval (t with 1 or 2 degrees of freedom) reached down to 0.
func TestPrecisionRuleNeedsBatches(t *testing.T) {
	est := estimate.Options{Confidence: 0.95}
	const precision, interval = 0.2, 100 * time.Millisecond
	clk := loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}
	var total loader.Counters
	var batches []loader.Counters
	add := func(b loader.Counters) {
		batches = append(batches, b)
		total = addTotals(total, b)
	}
	add(nsCounters(150, 500e3, 20e3))
	add(nsCounters(150, 500e3, 20e3))
	r := estimateTarget(clk, total, batches, est)
	if r.Err != nil || !(r.Result.RelHalfWidth < 0.2) || r.Result.Events < estimate.MinStopEvents {
		t.Fatalf("setup: %+v %v", r.Result, r.Err)
	}
	if r.Batches != 2 || r.Result.Batches != 2 {
		t.Errorf("batches: row %d, result %d, want 2 (the per-call interval rests on the batches too)", r.Batches, r.Result.Batches)
	}
	if r.Reached(precision) {
		t.Errorf("reached after 2 batches: %+v", r.Result)
	}
	if need := r.Remaining(precision, 200*time.Millisecond, interval, est); need < 2800*time.Millisecond {
		t.Errorf("remaining %s, want at least 28 more polls of 100ms", need)
	}
	// One call in a single batch cannot stop either.
	one := estimateTarget(clk, nsCounters(300, 500e3, 20e3), []loader.Counters{nsCounters(300, 500e3, 20e3)}, est)
	if one.Reached(precision) {
		t.Errorf("reached after 1 batch: %+v", one.Result)
	}
	for len(batches) < estimate.MinStopBatches {
		add(nsCounters(150, 500e3, 20e3))
	}
	r = estimateTarget(clk, total, batches, est)
	if !r.Reached(precision) || r.Remaining(precision, 3*time.Second, interval, est) != 0 {
		t.Errorf("not reached after %d batches: %+v", len(batches), r.Result)
	}
	// A tick clock: the same rule.
	jc := loader.Clock{Kind: loader.ClockTick, Tick: 50 * time.Microsecond}
	tb := []loader.Counters{{Calls: 100, Ticks: 1000, TicksSq: loader.U128{Lo: 10000}}}
	if r := estimateTarget(jc, tb[0], tb, est); r.Reached(precision) || r.Err != nil {
		t.Errorf("tick clock reached after 1 batch: %+v %v", r.Result, r.Err)
	}
}

// addTotals adds two counters (the cumulative totals of batches).
func addTotals(a, b loader.Counters) loader.Counters {
	a.Calls += b.Calls
	a.Ticks += b.Ticks
	a.NsSum += b.NsSum
	a.NsSq = a.NsSq.Add(b.NsSq)
	a.TicksSq = a.TicksSq.Add(b.TicksSq)
	return a
}

func TestScaleCallers(t *testing.T) {
	cs := []Caller{{Ticks: 300}, {Ticks: 100}, {Ticks: 0}}
	scaleCallers(cs, 1001)
	if cs[0].Ticks+cs[1].Ticks+cs[2].Ticks != 1001 || cs[1].Ticks != 250 || cs[2].Ticks != 0 {
		t.Errorf("scaled: %+v", cs)
	}
	none := []Caller{{Ticks: 0}}
	scaleCallers(none, 50)
	if none[0].Ticks != 0 {
		t.Errorf("no estimates: %+v", none)
	}
}

func TestDedupeSpecs(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	specs := []loader.Spec{
		{Kind: loader.KindUser, Name: "a", Binary: bin, Offset: 0x100},
		{Kind: loader.KindUser, Name: "a-again", Binary: filepath.Join(filepath.Dir(bin), ".", filepath.Base(bin)), Offset: 0x100},
		{Kind: loader.KindUser, Name: "b", Binary: bin, Offset: 0x200},
		{Kind: loader.KindSyscall, Name: "syscall:read", Symbol: "read", Arg: 0},
		{Kind: loader.KindSyscall, Name: "syscall:read", Symbol: "read", Arg: 0},
	}
	got := dedupeSpecs(specs)
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "a,b,syscall:read" {
		t.Errorf("deduped to %v", names)
	}
}

func TestStackComments(t *testing.T) {
	tr := &TargetResult{Name: "f", Callers: []Caller{
		{Calls: 5},
		{Calls: 2, Cut: true, Stop: "no unwind information in /lib/a.so"},
		{Calls: 3, Cut: true, Stop: "stack copy too short in /bin/x"},
		{Calls: 1, Cut: true, Stop: "no unwind information in /lib/a.so"},
	}}
	got := strings.Join(tr.StackComments(), "\n")
	want := "f: caller stacks that ended before their outermost frame: 6 of 11 crossing records\n" +
		"  3 records: no unwind information in /lib/a.so\n" +
		"  3 records: stack copy too short in /bin/x"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if c := (&TargetResult{Callers: []Caller{{Calls: 4}}}).StackComments(); c != nil {
		t.Errorf("complete stacks: %q, want none", c)
	}
}

// TestDefaults: a zero Config gets its defaults in one place, the window
// the budget runner's own, and the confidence level the one the
// estimators use for zero, so that a result says what its intervals are.
func TestDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.Window != budget.DefaultWindow || c.Interval != DefaultInterval {
		t.Errorf("window %v, interval %v: want %v, %v", c.Window, c.Interval, budget.DefaultWindow, DefaultInterval)
	}
	if c.Estimate.Confidence != estimate.DefaultConfidence || c.Correction != CorrectionNone {
		t.Errorf("confidence %v, correction %q: want %v, %q", c.Estimate.Confidence, c.Correction, estimate.DefaultConfidence, CorrectionNone)
	}
	for _, tc := range []struct {
		cfg  Config
		want ClockKind
	}{
		{Config{Targets: Targets{Users: []string{"f"}}}, ClockNS},
		{Config{Targets: Targets{Users: []string{"f"}}, Exact: true}, ClockJiffies},
		{Config{Targets: Targets{Syscalls: []string{"read"}}}, ClockJiffies},
		{Config{Targets: Targets{Users: []string{"f"}}, Clock: Clock{Kind: ClockTick, Tick: time.Millisecond}}, ClockTick},
	} {
		if got := tc.cfg.withDefaults().Clock; got.Kind != tc.want {
			t.Errorf("%+v: clock %v, want kind %d", tc.cfg.Targets, got, tc.want)
		}
	}
	if c := (Config{Clock: Clock{Kind: ClockNS}}).withDefaults().Clock; c.Tick != time.Nanosecond || c.String() != "ns" {
		t.Errorf("ns clock %+v (%s)", c, c)
	}
}

// TestCountersSub: the increments between two reads carry the borrow of
// the 128-bit sum of squares, and a histogram's buckets.
func TestCountersSub(t *testing.T) {
	h0, h1 := &histogram.Hist{}, &histogram.Hist{}
	h0.Counts[3], h1.Counts[3], h1.Counts[5] = 2, 7, 1
	prev := Counters{Calls: 10, Ticks: 100, TicksSq: math.MaxUint64 - 5, TicksSqHi: 1, Hist: h0}
	cur := Counters{Calls: 15, Ticks: 160, TicksSq: 4, TicksSqHi: 3, Hist: h1}
	d := cur.Sub(prev)
	// (3<<64 + 4) - (1<<64 + 2^64-6) = 1<<64 + 10
	if d.Calls != 5 || d.Ticks != 60 || d.TicksSq != 10 || d.TicksSqHi != 1 {
		t.Errorf("increment %+v: want 5 calls, 60 ticks, squares 1<<64 + 10", d)
	}
	if d.Hist == nil || d.Hist.Counts[3] != 5 || d.Hist.Counts[5] != 1 || d.Hist.Total() != 6 {
		t.Errorf("histogram increment %v", d.Hist)
	}
	if first := cur.Sub(Counters{}); first.Hist.Total() != 8 {
		t.Errorf("first read: %d calls in the histogram, want 8", first.Hist.Total())
	}
	if none := (Counters{Calls: 1}).Sub(prev); none.Hist != nil {
		t.Error("a histogram from counters that keep none")
	}
}
