package bpf

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
)

// BenchmarkQhistUpdate measures what one update of the quantile histogram
// (qhist.h's tp_qh_add: lookup, bucket index, increment) costs in BPF:
// syscall programs loop 1000 times over durations spread across the
// buckets without the update, with it, and with the earlier linear
// layout's update (qh_add_linear), run in turn (A B C A B C) in batches of
// 200 runs, with run-time statistics; each update's difference per
// iteration, mean and 95% interval over the batches (Student t).
//
//	go test -run '^$' -bench QhistUpdate -benchtime 1x ./bpf/
func BenchmarkQhistUpdate(b *testing.B) {
	bpftest.Require(b) // it also raises the memlock limit
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable BPF run-time statistics: %v", err)
	}
	defer st.Close()
	var objs QhbenchObjects
	if err := LoadQhbenchObjects(&objs, nil); err != nil {
		b.Fatal(err)
	}
	defer objs.Close()
	const loops, runs, batches = 1000, 200, 30
	perRun := func(p *ebpf.Program) float64 {
		before, err := p.Stats()
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < runs; i++ {
			if _, err := p.Run(&ebpf.RunOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		after, err := p.Stats()
		if err != nil || after.RunCount == before.RunCount {
			b.Fatalf("program statistics: %v", err)
		}
		return float64(after.Runtime-before.Runtime) / float64(after.RunCount-before.RunCount)
	}
	for n := 0; n < b.N; n++ {
		var geo, lin, extra []float64
		var none float64
		for k := 0; k < batches; k++ {
			a := perRun(objs.QhNone)
			g := perRun(objs.QhAdd)
			l := perRun(objs.QhAddLinear)
			geo, lin = append(geo, (g-a)/loops), append(lin, (l-a)/loops)
			extra = append(extra, (g-l)/loops)
			none += a / loops / batches
		}
		for _, m := range []struct {
			name string
			d    []float64
		}{{"geometric", geo}, {"linear", lin}, {"geometric - linear", extra}} {
			r, err := estimate.MeanOfSamples(m.d, estimate.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(r.Mean, "ns/update-"+strings.ReplaceAll(m.name, " ", ""))
			b.Logf("quantile histogram update (%s sub-buckets): %.1f ns [%.1f, %.1f] (95%%, %d batches) per update, over a loop iteration of %.1f ns without it",
				m.name, r.Mean, r.Low, r.High, batches, none)
		}
	}
}
